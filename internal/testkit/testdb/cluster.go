package testdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Patience of the servers of testdb's own.
const (
	initPatience  = 2 * time.Minute  // creating a data directory
	startPatience = 2 * time.Minute  // a start, until the server answers
	stopPatience  = 60 * time.Second // a stop, until the process has ended
	portAttempts  = 5                // starts on fresh ports when one is taken
)

// errPortTaken says that another process listened on a server's port first.
var errPortTaken = errors.New("port taken")

// StopMode says how Cluster.Stop stops a server, as pg_ctl stop -m does.
type StopMode string

// The modes of Cluster.Stop.
const (
	// StopSmart waits until every client has disconnected, then shuts
	// down cleanly (MariaDB: as StopFast).
	StopSmart StopMode = "smart"
	// StopFast disconnects the clients, rolling back their transactions,
	// and shuts down cleanly.
	StopFast StopMode = "fast"
	// StopImmediate ends the server at once, as a crash would: the next
	// Start recovers from the write-ahead log, keeping exactly what was
	// committed. PostgreSQL gets SIGQUIT, MariaDB SIGKILL.
	StopImmediate StopMode = "immediate"
)

// serverKind is what a kind of server (PostgreSQL, MariaDB) tells
// startCluster: how to create its data directory, run it, see that it
// answers and stop it.
type serverKind struct {
	name    string   // for messages: "PostgreSQL"
	dirName string   // in its directory's name: "pg"
	users   []string // who runs it when the tests run as root
	pidFile string   // relative to the directory; gone once it stopped
	// initialize creates the data directory of c.
	initialize func(ctx context.Context, c *Cluster) error
	// command returns the program and arguments that run c on c.port.
	command func(c *Cluster) []string
	// adminURL returns the superuser's URL of c's maintenance database.
	adminURL func(c *Cluster) string
	// ping connects to adminURL once.
	ping func(ctx context.Context, adminURL string) error
	// signals stop the server in each mode; death stops it when the test
	// process ends.
	signals map[StopMode]syscall.Signal
	death   syscall.Signal
	// env is added to the server process's environment (NAME=value
	// each), not to its tools'.
	env []string
}

// Cluster is a database server of testdb's own: a data directory in a
// temporary directory of os.TempDir(), and a server process, child of the
// test process, that listens on 127.0.0.1 on a port of its own. When the
// test process ends, however it ends, the kernel stops the server and a
// reaper process removes the directory. Stop, Start and Restart are not
// safe for concurrent use.
type Cluster struct {
	kind   *serverKind
	dir    string
	port   int
	owner  *account // who runs the server; nil: the current user
	proc   *os.Process
	reaper *reaper
	url    string // a migrated database's URL, set by OwnPostgres and OwnMySQL
}

// startCluster creates the data directory of a server of kind and starts
// the server on a free port. On error it leaves nothing behind.
func startCluster(kind *serverKind) (*Cluster, error) {
	if !ownServersSupported {
		return nil, fmt.Errorf("%w: they run on Linux only", errNoOwnServer)
	}
	c, err := newCluster(kind)
	if err != nil {
		return nil, err
	}
	if err := c.setUp(); err != nil {
		return nil, errors.Join(err, c.remove())
	}
	return c, nil
}

// newCluster creates the directory of a server of kind, its log file and
// its reaper.
func newCluster(kind *serverKind) (*Cluster, error) {
	owner, err := serverAccount(kind.users...)
	if err != nil {
		return nil, fmt.Errorf("%s of testdb's own: %w", kind.name, err)
	}
	dir, err := serverDir(kind.dirName)
	if err != nil {
		return nil, fmt.Errorf("%s of testdb's own: %w", kind.name, err)
	}
	c := &Cluster{kind: kind, dir: dir, owner: owner}
	if c.reaper, err = startReaper(dir, filepath.Join(dir, kind.pidFile)); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := errors.Join(owner.own(dir), c.createLog()); err != nil {
		return nil, errors.Join(err, c.remove())
	}
	return c, nil
}

// setUp creates c's data directory and starts the server, on another free
// port when another process took the first.
func (c *Cluster) setUp() error {
	ctx, cancel := context.WithTimeout(context.Background(), initPatience)
	defer cancel()
	if err := c.kind.initialize(ctx, c); err != nil {
		return fmt.Errorf("%s of testdb's own: %w", c.kind.name, err)
	}
	var err error
	for range portAttempts {
		if c.port, err = freePort(); err != nil {
			return err
		}
		if err = c.start(); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// AdminURL returns the URL of the server's maintenance database as its
// superuser, who needs no password: postgres://postgres@127.0.0.1:PORT/postgres
// for PostgreSQL, the go-sql-driver DSN root@tcp(127.0.0.1:PORT)/ for MariaDB.
func (c *Cluster) AdminURL() string { return c.kind.adminURL(c) }

// URL returns the URL of the database "tasks", migrated when the cluster
// was created, as the superuser: a postgres:// URL for PostgreSQL, a
// go-sql-driver DSN with parseTime=true for MariaDB.
func (c *Cluster) URL() string { return c.url }

// Addr returns the host and port that the server listens on, the same
// after every Start, for tests that put a proxy in front of it.
func (c *Cluster) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port))
}

// Restart stops the server in mode and starts it again.
func (c *Cluster) Restart(mode StopMode) error {
	if err := c.Stop(mode); err != nil {
		return err
	}
	return c.Start()
}

// Start starts the stopped server again, on the same port with the same
// data, and waits until it answers.
func (c *Cluster) Start() error {
	if c.proc != nil {
		return fmt.Errorf("start %s at %s: it runs", c.kind.name, c.Addr())
	}
	return c.start()
}

// runTool runs a tool of the server (initdb, mariadb-install-db) as the
// server's user in its directory and returns an error with its output when
// it fails.
func (c *Cluster) runTool(ctx context.Context, program string, args ...string) error {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = processAttr(c.owner, syscall.SIGKILL)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", filepath.Base(program), err, out)
	}
	return nil
}

// remove stops the server, if it runs, and removes its directory.
func (c *Cluster) remove() error {
	err := c.Stop(StopImmediate)
	if errRemove := os.RemoveAll(c.dir); errRemove != nil {
		err = errors.Join(err, fmt.Errorf("remove %s: %w", c.dir, errRemove))
	}
	return errors.Join(err, c.reaper.stop())
}
