package integration_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// Servers that refuse to serve: a database that may only be read (a
// standby, a server made read-only), an account at its limit of
// connections, a server that is shutting down. Every refusal is
// taskapi.ErrUnavailable, with the driver's error in the chain, and changes
// nothing.

// readOnlyRole is the statement that makes the role of roleURL read only,
// as the sessions of a standby are: its transactions may only read.
const readOnlyRole = "ALTER ROLE {role} SET default_transaction_read_only = on"

// TestTaskpgReadOnlyRole checks that every call of taskpg that writes, made
// as a role whose transactions are read only, fails with SQLSTATE 25006
// (read_only_sql_transaction) as taskapi.ErrUnavailable and changes nothing.
func TestTaskpgReadOnlyRole(t *testing.T) {
	t.Parallel()
	var dbURL string
	b := pgBackend()
	b.Open = func(t *testing.T) taskpg.DB { dbURL = testdb.PostgresURL(t); return testdb.Pool(t, dbURL, 16) }
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskpg.DB) taskpg.DB {
		return testdb.Pool(t, roleURL(t, dbURL, "CREATE ROLE {role} LOGIN", readOnlyRole), 4)
	}, wantRefused("25006"))
}

// TestTaskansiPostgresReadOnlyRole is TestTaskpgReadOnlyRole for taskansi
// on PostgreSQL.
func TestTaskansiPostgresReadOnlyRole(t *testing.T) {
	t.Parallel()
	var dbURL string
	b := ansiBackend(taskansi.Postgres, func(t *testing.T) *sql.DB { dbURL = testdb.PostgresURL(t); return ansiPostgres(t, dbURL) })
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskansi.DB) taskansi.DB {
		return ansiPostgres(t, roleURL(t, dbURL, "CREATE ROLE {role} LOGIN", readOnlyRole))
	}, wantRefused("25006"))
}

// TestTaskansiMySQLReadOnlyServer checks that every call of taskansi that
// writes, made on a MariaDB server with read_only on as a user who may
// not bypass it (no SUPER, no READ_ONLY ADMIN), fails with
// ER_OPTION_PREVENTS_STATEMENT (1290) as taskapi.ErrUnavailable and changes
// nothing. The server is the test's own: read_only holds for all its
// databases.
func TestTaskansiMySQLReadOnlyServer(t *testing.T) {
	t.Parallel()
	var cluster *testdb.Cluster
	b := ansiBackend(taskansi.MySQL, func(t *testing.T) *sql.DB {
		cluster = testdb.OwnMySQL(t)
		return openMySQL(t, mustDSN(t, cluster.URL()))
	})
	conformance.ReadOnly(t, b, func(t *testing.T, db taskansi.DB) taskansi.DB {
		root := db.(*sql.DB)
		exec := func(t testing.TB, statement string) {
			t.Helper()
			if _, err := root.ExecContext(context.Background(), statement); err != nil {
				t.Fatalf("%s: %v", statement, err)
			}
		}
		user := openMySQL(t, mysqlApplicationUser(t, exec, mustDSN(t, cluster.URL()), ""))
		exec(t, "SET GLOBAL read_only = ON")
		return user
	}, wantRefused("1290"))
}

// TestTaskansiMySQLReadOnlyTransactions checks that every call of taskansi
// that writes, made in sessions whose transactions are read only
// (tx_read_only), fails with ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION (1792)
// as taskapi.ErrUnavailable and changes nothing. It needs MariaDB, whose
// variable it sets.
func TestTaskansiMySQLReadOnlyTransactions(t *testing.T) {
	t.Parallel()
	var cfg *mysql.Config
	b := migratedMySQL(&cfg, true)
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskansi.DB) taskansi.DB {
		readOnly := cfg.Clone()
		readOnly.Params = map[string]string{"tx_read_only": "1"}
		return openMySQL(t, readOnly)
	}, wantRefused("1792"))
}

// TestTaskpgConnectionLimit checks that taskpg's calls as a role whose
// CONNECTION LIMIT is reached fail with SQLSTATE 53300
// (too_many_connections) as taskapi.ErrUnavailable.
func TestTaskpgConnectionLimit(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	limited := roleURL(t, dbURL, "CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
	holdPostgres(t, limited)
	repo := must[*taskpg.Repository](t, "New")(taskpg.New("limited"))
	refusedCalls(t, repo, taskpg.DB(testdb.Pool(t, dbURL, 2)), taskpg.DB(testdb.Pool(t, limited, 2)), wantRefused("53300"))
}

// TestTaskansiPostgresConnectionLimit is TestTaskpgConnectionLimit for
// taskansi on PostgreSQL.
func TestTaskansiPostgresConnectionLimit(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	limited := roleURL(t, dbURL, "CREATE ROLE {role} LOGIN CONNECTION LIMIT 1")
	holdPostgres(t, limited)
	repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.Postgres, "limited"))
	refusedCalls(t, repo, taskansi.DB(ansiPostgres(t, dbURL)), taskansi.DB(ansiPostgres(t, limited)), wantRefused("53300"))
}

// TestTaskansiMySQLUserConnectionLimit checks that taskansi's calls as a
// user whose MAX_USER_CONNECTIONS is reached fail with
// ER_USER_LIMIT_REACHED (1226) as taskapi.ErrUnavailable.
func TestTaskansiMySQLUserConnectionLimit(t *testing.T) {
	t.Parallel()
	ctx, cfg := t.Context(), testdb.MySQLConfig(t)
	admin := openMySQL(t, cfg)
	if err := migrations.Up(ctx, admin, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	limited := mysqlApplicationUser(t, testdb.MySQLAdminExec, cfg, "WITH MAX_USER_CONNECTIONS 1")
	held := must[*sql.Conn](t, "connect as the limited user")(openMySQL(t, limited).Conn(ctx))
	t.Cleanup(func() { held.Close() })
	if err := held.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.MySQL, "limited"))
	refusedCalls(t, repo, taskansi.DB(admin), taskansi.DB(openMySQL(t, limited)), wantRefused("1226"))
}

// TestPostgresShutdownRefusesConnections stops a server of the test's own
// in smart mode while a session holds it open, so that it refuses new
// connections with SQLSTATE 57P03 (cannot_connect_now, "the database system
// is shutting down") until that session ends, and checks that the calls of
// taskpg and of taskansi on new connections fail with it as
// taskapi.ErrUnavailable.
func TestPostgresShutdownRefusesConnections(t *testing.T) {
	t.Parallel()
	ctx, c := t.Context(), testdb.OwnPostgres(t)
	// The sessions that hold the server open, one for each package: they
	// still serve while it refuses new ones.
	heldPg := must[*pgx.Conn](t, "connect")(pgx.Connect(ctx, c.URL()))
	heldDB := ansiPostgres(t, c.URL())
	heldSQL := must[*sql.Conn](t, "connect")(heldDB.Conn(ctx))
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(testdb.StopSmart) }()
	defer func() {
		heldPg.Close(context.Background())
		heldSQL.Close()
		heldDB.Close() // heldSQL went back to its pool
		if err := <-stopped; err != nil {
			t.Errorf("stop the server: %v", err)
		}
	}()
	awaitRefusal(t, c.URL(), "57P03")
	pgRepo := must[*taskpg.Repository](t, "New")(taskpg.New("pg"))
	refusedCalls(t, pgRepo, taskpg.DB(heldPg), taskpg.DB(testdb.Pool(t, c.URL(), 2)), wantRefused("57P03"))
	ansiRepo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.Postgres, "ansi"))
	refusedCalls(t, ansiRepo, taskansi.DB(heldSQL), taskansi.DB(ansiPostgres(t, c.URL())), wantRefused("57P03"))
}

// refusedCalls registers repo's owner and initializes the topic "t" on
// admin, unless they are already, then checks that its Heartbeat and a Push on refused, a handle
// that the server refuses, fail as want accepts, and that "t" holds no
// task afterwards.
func refusedCalls[Tx any](t *testing.T, repo taskapi.Repository[Tx], admin, refused Tx, want func(t *testing.T, call string, err error)) {
	t.Helper()
	ctx := t.Context()
	must[bool](t, "Register")(repo.Register(ctx, admin))
	must[bool](t, "Initialize")(repo.Initialize(ctx, admin, "t"))
	want(t, "Heartbeat", repo.Heartbeat(ctx, refused))
	_, err := repo.Push(ctx, refused, "t", taskapi.Append, taskapi.Creation{Identifier: "refused"})
	want(t, "Push", err)
	if infos := must[[]taskapi.Info](t, "Page")(repo.Page(ctx, admin, "t", taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)); len(infos) != 0 {
		t.Errorf("the refused push stored %v", infos)
	}
}

// wantRefused returns a check that fails t unless err keeps the driver's
// error with code (a SQLSTATE, a MySQL error number) in its chain, is
// taskapi.ErrUnavailable and no conflict: the call is not retried.
func wantRefused(code string) func(t *testing.T, call string, err error) {
	return wantSentinel(code, taskapi.ErrUnavailable, taskapi.ErrConflict)
}

// wantSentinel returns a check that fails t unless err keeps the driver's
// error with code in its chain, and is sentinel and not other.
func wantSentinel(code string, sentinel, other error) func(t *testing.T, call string, err error) {
	return func(t *testing.T, call string, err error) {
		t.Helper()
		if !hasCode(err, code) {
			t.Errorf("%s refused: error = %v, want %s in the chain", call, err, code)
		}
		if !errors.Is(err, sentinel) || errors.Is(err, other) {
			t.Errorf("%s refused: error = %v, want %v and no %v", call, err, sentinel, other)
		}
	}
}

// holdPostgres opens a connection on dbURL, closed when t ends.
func holdPostgres(t *testing.T, dbURL string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
}

// awaitRefusal waits until the server of dbURL refuses a new connection,
// and fails t unless it does so with SQLSTATE code.
func awaitRefusal(t *testing.T, dbURL, code string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		conn, err := pgconn.Connect(t.Context(), dbURL)
		if err != nil {
			if !hasCode(err, code) {
				t.Fatalf("a connection refused with %v, want SQLSTATE %s", err, code)
			}
			return
		}
		conn.Close(t.Context())
		if time.Now().After(deadline) {
			t.Fatalf("the server still accepts connections a minute later")
		}
	}
}

// ansiPostgres opens a handle of database/sql on dbURL with an empty
// search_path, as testdb.Pool does, and the run-time parameters params,
// names and values in turn; it closes the handle when t ends.
func ansiPostgres(t *testing.T, dbURL string, params ...string) *sql.DB {
	t.Helper()
	cfg := must[*pgx.ConnConfig](t, "parse the URL")(pgx.ParseConfig(dbURL))
	cfg.RuntimeParams["search_path"] = ""
	for i := 0; i+1 < len(params); i += 2 {
		cfg.RuntimeParams[params[i]] = params[i+1]
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

// mustDSN parses the go-sql-driver DSN dsn.
func mustDSN(t *testing.T, dsn string) *mysql.Config {
	t.Helper()
	return must[*mysql.Config](t, "parse "+dsn)(mysql.ParseDSN(dsn))
}

// requireMariaDB skips t unless db is a MariaDB server.
func requireMariaDB(t *testing.T, db *sql.DB) {
	t.Helper()
	var version string
	if err := db.QueryRowContext(t.Context(), "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(version, "MariaDB") {
		t.Skipf("the server is MySQL %s: the test needs MariaDB", version)
	}
}

// A role that may only read: every call that writes fails with
// taskapi.ErrPermission, the server's refusal in the chain, and changes
// nothing; every call that reads succeeds (conformance.ReadOnly).

// readerGrants let a PostgreSQL role read every table of the schema, and
// nothing more.
var readerGrants = []string{
	"GRANT USAGE ON SCHEMA public TO {role}",
	"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
}

// TestTaskpgReaderRole checks taskpg's calls as a role granted SELECT
// alone: the writes fail with SQLSTATE 42501 (insufficient_privilege).
func TestTaskpgReaderRole(t *testing.T) {
	t.Parallel()
	var dbURL string
	b := pgBackend()
	b.Open = func(t *testing.T) taskpg.DB { dbURL = testdb.PostgresURL(t); return testdb.Pool(t, dbURL, 16) }
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskpg.DB) taskpg.DB {
		return testdb.Pool(t, grantedRoleURL(t, dbURL, readerGrants, "CREATE ROLE {role} LOGIN"), 4)
	}, wantDenied("42501"))
}

// TestTaskansiPostgresReaderRole is TestTaskpgReaderRole for taskansi on
// PostgreSQL.
func TestTaskansiPostgresReaderRole(t *testing.T) {
	t.Parallel()
	var dbURL string
	b := ansiBackend(taskansi.Postgres, func(t *testing.T) *sql.DB { dbURL = testdb.PostgresURL(t); return ansiPostgres(t, dbURL) })
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskansi.DB) taskansi.DB {
		return ansiPostgres(t, grantedRoleURL(t, dbURL, readerGrants, "CREATE ROLE {role} LOGIN"))
	}, wantDenied("42501"))
}

// TestTaskansiMySQLReaderUser checks taskansi's calls as a MySQL or
// MariaDB user granted SELECT alone on the database: the writes fail with
// ER_TABLEACCESS_DENIED_ERROR (1142).
func TestTaskansiMySQLReaderUser(t *testing.T) {
	t.Parallel()
	var cfg *mysql.Config
	b := migratedMySQL(&cfg, false)
	conformance.ReadOnly(t, b, func(t *testing.T, _ taskansi.DB) taskansi.DB {
		name := "reader_" + strings.ToLower(rand.Text()[:10])
		user := "'" + name + "'@'%'"
		testdb.MySQLAdminExec(t, "CREATE USER "+user+" IDENTIFIED BY 'reader'")
		t.Cleanup(func() { testdb.MySQLAdminExec(t, "DROP USER IF EXISTS "+user) })
		testdb.MySQLAdminExec(t, "GRANT SELECT ON `"+cfg.DBName+"`.* TO "+user)
		reader := cfg.Clone()
		reader.User, reader.Passwd = name, "reader"
		return openMySQL(t, reader)
	}, wantDenied("1142"))
}

// wantDenied accepts the error of a call that the server refused for a
// privilege the role lacks: code in the chain, as taskapi.ErrPermission,
// not as unavailable.
func wantDenied(code string) func(t *testing.T, call string, err error) {
	return wantSentinel(code, taskapi.ErrPermission, taskapi.ErrUnavailable)
}

// migratedMySQL is taskansi's MySQL backend on a fresh database that the
// administrator migrated, whose configuration it stores in cfg; with
// mariaDB, it skips the test on a MySQL server.
func migratedMySQL(cfg **mysql.Config, mariaDB bool) conformance.Backend[taskansi.DB] {
	return ansiBackend(taskansi.MySQL, func(t *testing.T) *sql.DB {
		*cfg = testdb.MySQLConfig(t)
		db := openMySQL(t, *cfg)
		if mariaDB {
			requireMariaDB(t, db)
		}
		if err := migrations.Up(t.Context(), db, migrations.MySQL); err != nil {
			t.Fatal(err)
		}
		return db
	})
}
