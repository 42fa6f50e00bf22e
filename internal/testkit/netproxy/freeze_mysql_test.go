package netproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
)

// conn opens a connection through the proxy, on a handle of its own,
// closed when t ends, and returns it with the number of its session.
func (r *myRig) conn(t *testing.T) (*sql.Conn, int) {
	t.Helper()
	db, err := sql.Open("mysql", r.proxied)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var id int
	if err := conn.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return conn, id
}

// kill ends the server's session id, and waits until it has ended.
func (r *myRig) kill(t *testing.T, id int) {
	t.Helper()
	if _, err := r.direct.ExecContext(t.Context(), fmt.Sprintf("KILL %d", id)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server ends the session", func(ctx context.Context) (bool, error) {
		alive, err := r.sessionAlive(ctx, id)
		return !alive, err
	})
}

// sessionAlive says, through the direct handle, whether the server's
// session id is still there.
func (r *myRig) sessionAlive(ctx context.Context, id int) (bool, error) {
	return sqlExists(ctx, r.direct, "SELECT EXISTS (SELECT * FROM information_schema.PROCESSLIST WHERE ID = ?)", id)
}

// checkExists checks, through the direct handle, whether the row id
// exists.
func (r *myRig) checkExists(t *testing.T, id int, want bool) {
	t.Helper()
	got, err := sqlExists(t.Context(), r.direct, "SELECT EXISTS (SELECT * FROM probe WHERE id = ?)", id)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the row %d exists: %v, want %v", id, got, want)
	}
}

// TestFreezeBeforeOnMySQL checks that a COM_QUERY frozen Before never
// reaches the server, whose session outlives the client's giving up, while
// another connection carries on; and that the proxy lets go of the
// connection once the server, too, has ended the session.
func TestFreezeBeforeOnMySQL(t *testing.T) {
	t.Parallel()
	r := newMyRig(t)
	ctx := t.Context()
	a, id := r.conn(t)
	b, _ := r.conn(t)
	r.proxy.FreezeAt(sqlStarts("INSERT"), netproxy.Before)
	outcome := gaveUp(t, giveUp, func(ctx context.Context) error {
		_, err := a.ExecContext(ctx, "INSERT INTO probe VALUES (1)")
		return err
	})
	if st := fired(t, r.proxy); st.Message != "COM_QUERY" {
		t.Errorf("Fired() = %v, want the insertion", st)
	}
	if _, err := b.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Errorf("the other connection: %v", err)
	}
	await(t, outcome)
	if alive, err := r.sessionAlive(ctx, id); err != nil || !alive {
		t.Errorf("the server's session is alive: %v, %v; want true", alive, err)
	}
	r.checkExists(t, 1, false)
	checkFrozen(t, r.proxy, 1)
	r.kill(t, id)
	eventually(t, "the proxy lets go of the connection", func(context.Context) (bool, error) {
		return r.proxy.Frozen() == 0, nil
	})
}

// TestFreezeAfterACommitOnMySQL checks that a COMMIT frozen After commits
// while the client gets no answer, nor learns that the server has ended
// the session since, and that the proxy lets go of the connection once
// the client has closed its side too.
func TestFreezeAfterACommitOnMySQL(t *testing.T) {
	t.Parallel()
	r := newMyRig(t)
	ctx := t.Context()
	a, id := r.conn(t)
	for _, statement := range []string{"START TRANSACTION", "INSERT INTO probe VALUES (1)"} {
		if _, err := a.ExecContext(ctx, statement); err != nil {
			t.Fatal(err)
		}
	}
	r.proxy.FreezeAt(sqlStarts("COMMIT"), netproxy.After)
	outcome := gaveUp(t, 5*giveUp, func(ctx context.Context) error {
		_, err := a.ExecContext(ctx, "COMMIT")
		return err
	})
	eventually(t, "the server commits", func(ctx context.Context) (bool, error) {
		return sqlExists(ctx, r.direct, "SELECT EXISTS (SELECT * FROM probe WHERE id = ?)", 1)
	})
	checkFrozen(t, r.proxy, 1)
	r.kill(t, id)
	await(t, outcome)
	eventually(t, "the proxy lets go of the connection", func(context.Context) (bool, error) {
		return r.proxy.Frozen() == 0, nil
	})
}
