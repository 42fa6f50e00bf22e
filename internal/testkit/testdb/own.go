package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/migrations"
)

// OwnPostgres starts a PostgreSQL cluster for t alone, for tests that stop
// and start the server (Cluster.Stop, Start, Restart) without disturbing
// other tests, and removes it when t ends. Cluster.URL names its database
// "tasks", migrated. It needs PostgreSQL's server binaries, whatever
// TASK_TEST_POSTGRES_URL says: without them it skips t, or fails it under
// TASK_TEST_REQUIRE_POSTGRES=1. Creating the cluster takes a second or two.
func OwnPostgres(t testing.TB) *Cluster {
	t.Helper()
	return OwnPostgresEnv(t)
}

// OwnPostgresEnv is OwnPostgres with env (NAME=value each) added to the
// environment of the server process, not of initdb: a server whose clock
// libfaketime shifts (LD_PRELOAD, FAKETIME), say. The variables hold for
// every Start of the cluster.
func OwnPostgresEnv(t testing.TB, env ...string) *Cluster {
	t.Helper()
	start := func() (*Cluster, error) { return startPostgresClusterEnv(env) }
	return ownCluster(t, start, RequirePostgresEnv, preparePostgres)
}

// OwnMySQL is OwnPostgres for MariaDB: a MariaDB server for t alone, with a
// migrated database "tasks". It needs MariaDB's binaries (mariadb-install-db
// and mariadbd), whatever TASK_TEST_MYSQL_URL says: without them it skips
// t, or fails it under TASK_TEST_REQUIRE_MYSQL=1.
func OwnMySQL(t testing.TB) *Cluster {
	t.Helper()
	return ownCluster(t, startMariaDBCluster, RequireMySQLEnv, prepareMySQL)
}

// ownCluster starts a cluster for t with start, removes it when t ends,
// and prepares its database "tasks" with prepare. It skips or fails t,
// following requireEnv, when the server's binaries are missing.
func ownCluster(t testing.TB, start func() (*Cluster, error), requireEnv string, prepare func(ctx context.Context, c *Cluster) error) *Cluster {
	t.Helper()
	return own(t, start, requireEnv, "testdb", func(c *Cluster) error { return prepare(context.Background(), c) })
}

// own starts servers of t's own with start, removes them when t ends, and
// prepares them with prepare; what names them in t's errors. It skips or
// fails t, following requireEnv, when their binaries are missing.
func own[S interface{ remove() error }](t testing.TB, start func() (S, error), requireEnv, what string, prepare func(S) error) S {
	t.Helper()
	s, err := start()
	if errors.Is(err, errNoOwnServer) {
		unavailable(t, requireEnv, err.Error())
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Cleanup(func() {
		if err := s.remove(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
	if err := prepare(s); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return s
}

// preparePostgres creates and migrates the database "tasks" on c.
func preparePostgres(ctx context.Context, c *Cluster) error {
	if err := adminExec(ctx, c.AdminURL(), "CREATE DATABASE tasks"); err != nil {
		return err
	}
	c.url = withDatabase(c.AdminURL(), "tasks")
	return migrate(ctx, c.url)
}

// prepareMySQL creates and migrates the database "tasks" on c.
func prepareMySQL(ctx context.Context, c *Cluster) error {
	if err := mysqlExec(ctx, c.AdminURL(), "CREATE DATABASE tasks CHARACTER SET utf8mb4"); err != nil {
		return err
	}
	c.url = "root@tcp(" + c.Addr() + ")/tasks?parseTime=true"
	db, err := sql.Open("mysql", c.url)
	if err != nil {
		return fmt.Errorf("open %s: %w", c.url, err)
	}
	defer db.Close()
	return migrations.Up(ctx, db, migrations.MySQL)
}
