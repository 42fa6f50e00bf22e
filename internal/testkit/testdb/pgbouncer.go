package testdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// RequirePgBouncerEnv, set to 1, makes the tests that need PgBouncer fail
// rather than skip when its binary is missing (CI installs it).
const RequirePgBouncerEnv = "TASK_TEST_REQUIRE_PGBOUNCER"

// bouncer is the PgBouncer that the tests of a process share, in front of
// the shared PostgreSQL server.
var bouncer struct {
	once sync.Once
	c    *Cluster
	err  error
}

// PgBouncerURL returns dbURL, a database of the shared PostgreSQL server
// (PostgresURL), reached through a PgBouncer in transaction pooling mode
// that the tests of the process share, with pgx's default_query_exec_mode
// set to exec: PgBouncer 1.18 (Debian 12's) keeps no client's prepared
// statement from one transaction to the next. The PgBouncer ignores the
// client's search_path (ignore_startup_parameters): its server connections
// have the server's. It skips t when PgBouncer is not installed, or fails
// it under TASK_TEST_REQUIRE_PGBOUNCER=1.
func PgBouncerURL(t testing.TB, dbURL string) string {
	t.Helper()
	postgresServer(t)
	bouncer.once.Do(func() {
		program := findProgram("pgbouncer")
		if program == "" {
			bouncer.err = errNoPgBouncer
			return
		}
		target, err := url.Parse(server.url)
		if err != nil {
			bouncer.err = err
			return
		}
		bouncer.c, bouncer.err = startCluster(pgbouncerKind(program, target.Host))
	})
	if bouncer.err != nil {
		unavailable(t, RequirePgBouncerEnv, bouncer.err.Error())
	}
	through, err := throughBouncer(dbURL, bouncer.c)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return through
}

// OwnPgBouncer starts a PgBouncer in transaction pooling mode for t alone
// in front of c, a PostgreSQL of t's own (OwnPostgres), for tests that
// restart it (Cluster.Stop, Start, Restart), and removes it when t ends.
// Its URL is c's database "tasks" through it, in pgx's exec mode, as
// PgBouncerURL gives. It skips t without PgBouncer, or fails it under
// TASK_TEST_REQUIRE_PGBOUNCER=1.
func OwnPgBouncer(t testing.TB, c *Cluster) *Cluster {
	t.Helper()
	start := func() (*Cluster, error) {
		program := findProgram("pgbouncer")
		if program == "" {
			return nil, errNoPgBouncer
		}
		return startCluster(pgbouncerKind(program, c.Addr()))
	}
	return ownCluster(t, start, RequirePgBouncerEnv, func(_ context.Context, b *Cluster) (err error) {
		b.url, err = throughBouncer(c.URL(), b)
		return err
	})
}

// errNoPgBouncer says that PgBouncer's binary is missing.
var errNoPgBouncer = fmt.Errorf("%w: pgbouncer is not installed (Debian: apt-get install pgbouncer)", errNoOwnServer)

// throughBouncer returns dbURL with its host replaced by the PgBouncer b's,
// and pgx's exec mode.
func throughBouncer(dbURL string, b *Cluster) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("parse URL: %w", err)
	}
	u.Host = b.Addr()
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgbouncerKind is PgBouncer run from program in front of the PostgreSQL
// server at target (host:port): every database of the server under its own
// name, every user trusted, transaction pooling. It runs as the user
// "postgres" when the tests run as root (it refuses to run as root).
// Its settings file is written at each start, with the start's port
// (PgBouncer takes no port on its command line).
func pgbouncerKind(program, target string) *serverKind {
	return &serverKind{
		name:    "PgBouncer",
		dirName: "pgbouncer",
		users:   []string{"postgres"},
		pidFile: "pgbouncer.pid",
		initialize: func(_ context.Context, c *Cluster) error {
			return os.WriteFile(filepath.Join(c.dir, "users.txt"), []byte(`"postgres" ""`+"\n"), 0o644)
		},
		command: func(c *Cluster) []string {
			ini := filepath.Join(c.dir, "pgbouncer.ini")
			if err := os.WriteFile(ini, []byte(pgbouncerSettings(c, target)), 0o644); err != nil {
				// PgBouncer then fails to start, and its log says why.
				return []string{program, filepath.Join(c.dir, "missing.ini")}
			}
			return []string{program, ini}
		},
		adminURL: func(c *Cluster) string {
			return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&default_query_exec_mode=exec", c.Addr())
		},
		ping: func(ctx context.Context, adminURL string) error {
			return adminExec(ctx, adminURL, "SELECT 1")
		},
		signals: map[StopMode]syscall.Signal{
			StopSmart:     syscall.SIGINT,  // waits for the transactions under way
			StopFast:      syscall.SIGTERM, // closes every connection at once
			StopImmediate: syscall.SIGKILL,
		},
		death: syscall.SIGTERM,
	}
}

// pgbouncerSettings are the settings of c's PgBouncer in front of target:
// room for the many pools of parallel tests, the startup parameters that
// pgx and the tests send and PgBouncer 1.18 does not know ignored, and a
// server login tried again after a second, not the default 15 s: a soak
// that restarted PostgreSQL behind it saw every client wait that long, and
// the whole fleet's heartbeats with them.
func pgbouncerSettings(c *Cluster, target string) string {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		host, port = target, "5432"
	}
	return fmt.Sprintf(`[databases]
* = host=%s port=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir = %s
pidfile = %s
auth_type = trust
auth_file = %s
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 40
max_db_connections = 0
ignore_startup_parameters = extra_float_digits,search_path
server_reset_query =
server_login_retry = 1
admin_users = postgres
`, host, port, c.port, c.dir, filepath.Join(c.dir, "pgbouncer.pid"), filepath.Join(c.dir, "users.txt"))
}
