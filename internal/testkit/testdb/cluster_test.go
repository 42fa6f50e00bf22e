package testdb_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// TestOwnPostgresKeepsCommittedDataAcrossCrash stops a cluster of the
// test's own immediately, as a crash would, with one transaction
// committed and one open, and starts it again on the same address: the
// committed row is there, the other is not, and the database is migrated.
func TestOwnPostgresKeepsCommittedDataAcrossCrash(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := testdb.OwnPostgres(t)
	conn := connectPostgres(t, c.URL())
	mustExec(t, conn, "CREATE TABLE public.kept (n int)")
	mustExec(t, conn, "INSERT INTO public.kept VALUES (1)")
	open := connectPostgres(t, c.URL())
	tx, err := open.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO public.kept VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	addr := c.Addr()
	if err := c.Restart(testdb.StopImmediate); err != nil {
		t.Fatal(err)
	}
	if c.Addr() != addr {
		t.Errorf("the server moved from %s to %s", addr, c.Addr())
	}
	if err := conn.Ping(ctx); err == nil {
		t.Error("a connection survived the immediate stop")
	}
	var kept string
	var tables int
	conn = connectPostgres(t, c.URL())
	if err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(n::text, ','), '') FROM public.kept").Scan(&kept); err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_catalog.pg_tables
		WHERE schemaname = 'public' AND tablename IN ('task', 'task_topic', 'task_owner')`).Scan(&tables)
	if err != nil {
		t.Fatal(err)
	}
	if kept != "1" || tables != 3 {
		t.Errorf("after the restart: rows %q, want the committed 1 only; %d of the 3 tables", kept, tables)
	}
}

// TestOwnPostgresStopsAndStarts stops a cluster the fast way: it refuses
// connections until started again, and stopping it twice is no error.
func TestOwnPostgresStopsAndStarts(t *testing.T) {
	t.Parallel()
	c := testdb.OwnPostgres(t)
	if err := c.Stop(testdb.StopFast); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(testdb.StopFast); err != nil {
		t.Errorf("a second stop: %v", err)
	}
	if conn, err := pgx.Connect(t.Context(), c.AdminURL()); err == nil {
		conn.Close(t.Context())
		t.Fatal("the stopped server accepted a connection")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Error("a running server started twice")
	}
	connectPostgres(t, c.URL())
}

// TestOwnMySQLKeepsCommittedDataAcrossCrash kills a MariaDB of the test's
// own and starts it again: the committed row is there.
func TestOwnMySQLKeepsCommittedDataAcrossCrash(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := testdb.OwnMySQL(t)
	db, err := sql.Open("mysql", c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (n int) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(testdb.StopImmediate); err != nil {
		t.Fatal(err)
	}
	var rows, tables int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM kept").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	err = db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'tasks' AND table_name IN ('task', 'task_topic', 'task_owner')`).Scan(&tables)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 1 || tables != 3 {
		t.Errorf("after the restart: %d rows of 1, %d of the 3 tables", rows, tables)
	}
}

// connectPostgres connects to url and closes the connection when t ends.
func connectPostgres(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// mustExec runs statement on conn and fails t on error.
func mustExec(t *testing.T, conn *pgx.Conn, statement string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), statement); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

// TestOwnPostgresEnvReachesTheServer starts a cluster with a variable
// added to its server's environment: a program that a session runs (COPY
// FROM PROGRAM) has it, also after a restart.
func TestOwnPostgresEnvReachesTheServer(t *testing.T) {
	t.Parallel()
	c := testdb.OwnPostgresEnv(t, "TASKREPO_TESTDB_ENV=reached")
	for _, when := range []string{"started", "restarted"} {
		if when == "restarted" {
			if err := c.Restart(testdb.StopFast); err != nil {
				t.Fatal(err)
			}
		}
		conn := connectPostgres(t, c.URL())
		mustExec(t, conn, "CREATE TEMPORARY TABLE environment (value text)")
		mustExec(t, conn, "COPY environment FROM PROGRAM 'printenv TASKREPO_TESTDB_ENV'")
		var value string
		if err := conn.QueryRow(t.Context(), "SELECT value FROM environment").Scan(&value); err != nil {
			t.Fatal(err)
		}
		if value != "reached" {
			t.Errorf("TASKREPO_TESTDB_ENV in the server's environment, %s: %q, want \"reached\"", when, value)
		}
	}
}
