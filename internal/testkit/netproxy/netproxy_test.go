package netproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
)

// TestMain fails the package when a goroutine outlives its tests: Close
// waits for every goroutine of the proxy. go-sql-driver/mysql keeps quiet
// about the connections that the tests cut on purpose.
func TestMain(m *testing.M) {
	_ = mysql.SetLogger(&mysql.NopLogger{})
	goleak.VerifyTestMain(m)
}

// echo serves lines back on a free port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func roundTrip(c net.Conn) error {
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func TestCutDropsConnectionsAndRestoreLetsThemThrough(t *testing.T) {
	p, err := netproxy.Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Cut()
	if err := roundTrip(c); err == nil {
		t.Error("a connection carried on after Cut")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if roundTrip(c2) == nil {
			t.Error("a new connection went through while cut")
		}
		c2.Close()
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3); err != nil {
		t.Errorf("after Restore: %v", err)
	}
}

func TestCutAfterCutsMidMessage(t *testing.T) {
	p, err := netproxy.Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.CutAfter(8)
	if err := roundTrip(c); err != nil { // 5 bytes of the 8
		t.Fatalf("within the budget: %v", err)
	}
	if err := roundTrip(c); err == nil { // the line is cut after its third byte
		t.Fatal("a line beyond the budget went through")
	}
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if roundTrip(c2) == nil {
			t.Error("a new connection went through after the budget was spent")
		}
		c2.Close()
	}
	p.Restore()
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := roundTrip(c3); err != nil {
		t.Errorf("after Restore: %v", err)
	}
}
