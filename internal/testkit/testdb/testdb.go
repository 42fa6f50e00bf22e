// Package testdb provisions databases for tests: every test gets a fresh,
// migrated database of its own, so tests run in parallel and never see each
// other's tasks.
//
// PostgreSQL comes from TASK_TEST_POSTGRES_URL when it is set, else from a
// throwaway cluster of testdb's own when PostgreSQL's server binaries are
// installed (initdb and postgres, on PATH or in /usr/lib/postgresql/*/bin),
// else from testcontainers-go when a Docker engine answers, else the test
// is skipped with a message. TASK_TEST_REQUIRE_POSTGRES=1 turns the skip
// into a failure. MySQL and MariaDB likewise come from TASK_TEST_MYSQL_URL
// (a go-sql-driver DSN), a MariaDB of testdb's own (mariadb-install-db and
// mariadbd), or a MySQL container, TASK_TEST_REQUIRE_MYSQL=1 making them
// required. SQLite needs nothing: every test gets a file in its temporary
// directory.
//
// A server of testdb's own (Cluster) lives in a temporary directory
// taskrepo-testdb-KIND-PID-* of os.TempDir(), listens on 127.0.0.1 on a
// free port, and serves the tests of one process: the kernel stops it when
// that process ends (Linux's parent-death signal; on other systems testdb
// runs none), and a reaper process then removes the directory. When the
// tests run as root, the servers run as the user "postgres" or "mysql"
// (else "nobody"). OwnPostgres and OwnMySQL give a test a server of its
// own that it may stop and start; OwnReplicated a primary and its standby;
// OwnAutoFailover a pg_auto_failover monitor and two nodes, whose primary
// it may crash or switch over.
//
// testdb imports drivers, goose and testcontainers: unlike the rest of
// internal/ it serves tests only.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"
)

// Environment variables read by testdb.
const (
	PostgresURLEnv     = "TASK_TEST_POSTGRES_URL"
	RequirePostgresEnv = "TASK_TEST_REQUIRE_POSTGRES"
)

// unavailable skips t, or fails it when the environment requires the server.
func unavailable(t testing.TB, requireEnv, why string) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("testdb: %s (required by %s=1)", why, requireEnv)
	}
	t.Skipf("testdb: %s; skipping", why)
}

// randomName returns prefix followed by 16 random hex digits.
func randomName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Returns runs call in a goroutine and fails t unless it returns, without
// error, within patience: for calls that must not wait for a lock another
// transaction holds. Choose patience far above what the call takes and
// below the database's own lock wait timeout.
func Returns(t testing.TB, what string, patience time.Duration, call func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	case <-ctx.Done():
		t.Errorf("%s did not return within %v: it waits for a lock", what, patience)
		<-done
	}
}
