package testdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"

	"github.com/taskrepo/taskrepo/migrations"
)

// Environment variables read by testdb for MySQL and MariaDB.
const (
	MySQLURLEnv     = "TASK_TEST_MYSQL_URL"
	RequireMySQLEnv = "TASK_TEST_REQUIRE_MYSQL"
)

// mysqlServer is the MySQL or MariaDB server shared by the tests of one process.
var mysqlServer struct {
	once    sync.Once
	cfg     *mysql.Config // without a database
	cluster *Cluster      // testdb's own server, if it is one; reachable for its reaper's sake
	err     error
	skip    string
}

// MySQL returns a handle on a fresh, migrated MySQL or MariaDB database of
// t's own, created with CREATE DATABASE on the server that
// TASK_TEST_MYSQL_URL names (a go-sql-driver DSN such as
// root@tcp(127.0.0.1:3306)/), else on a MariaDB of testdb's own when
// MariaDB's binaries are installed, else in a testcontainers-go MySQL 8
// container. The database is dropped when t ends.
func MySQL(t testing.TB) *sql.DB {
	t.Helper()
	db := EmptyMySQL(t)
	if err := migrations.Up(context.Background(), db, migrations.MySQL); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return db
}

// EmptyMySQL returns a handle on a fresh MySQL or MariaDB database of t's
// own without taskrepo's tables, dropped when t ends.
func EmptyMySQL(t testing.TB) *sql.DB {
	t.Helper()
	return openMySQL(t, MySQLConfig(t))
}

// MySQLConfig returns the configuration of a fresh, empty database of t's
// own on the MySQL or MariaDB server (dropped when t ends), for tests that
// open it as other users.
func MySQLConfig(t testing.TB) *mysql.Config {
	t.Helper()
	mysqlServer.once.Do(startMySQL)
	if mysqlServer.skip != "" {
		unavailable(t, RequireMySQLEnv, mysqlServer.skip)
	}
	if mysqlServer.err != nil {
		t.Fatalf("testdb: %v", mysqlServer.err)
	}
	name := randomName("taskrepo_test_")
	ctx := context.Background()
	if err := mysqlAdminExec(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		if err := mysqlAdminExec(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	cfg := mysqlServer.cfg.Clone()
	cfg.DBName = name
	return cfg
}

// MySQLAdminExec runs statement on the MySQL or MariaDB server as its
// administrator: the user that TASK_TEST_MYSQL_URL names, else root.
func MySQLAdminExec(t testing.TB, statement string) {
	t.Helper()
	if err := mysqlAdminExec(context.Background(), statement); err != nil {
		t.Fatalf("testdb: %v", err)
	}
}

// openMySQL opens cfg and closes the handle when t ends.
func openMySQL(t testing.TB, cfg *mysql.Config) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("testdb: open MySQL: %v", err)
	}
	db.SetMaxOpenConns(16)
	t.Cleanup(func() { db.Close() })
	return db
}

// startMySQL finds the server and checks that it answers.
func startMySQL() {
	dsn := os.Getenv(MySQLURLEnv)
	if dsn == "" {
		dsn, mysqlServer.skip = sharedMySQL()
		if mysqlServer.skip != "" {
			return
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		mysqlServer.err = fmt.Errorf("parse %s: %w", MySQLURLEnv, err)
		return
	}
	cfg.DBName, cfg.ParseTime, cfg.Loc = "", true, time.UTC
	mysqlServer.cfg = cfg
	mysqlServer.err = mysqlAdminExec(context.Background(), "SELECT 1")
}

// sharedMySQL starts the server that the tests of this process share when
// no DSN names one, and returns its DSN, or why there is none: a MariaDB
// of testdb's own when MariaDB's binaries are installed (it lives as long
// as the test process), else a MySQL container when a Docker engine
// answers.
func sharedMySQL() (dsn, skip string) {
	c, err := startMariaDBCluster()
	if err == nil {
		mysqlServer.cluster = c
		return c.AdminURL(), ""
	}
	if !errors.Is(err, errNoOwnServer) {
		return "", fmt.Sprintf("%s is not set and %v", MySQLURLEnv, err)
	}
	dsn, errContainer := startMySQLContainer()
	if errContainer != nil {
		return "", fmt.Sprintf("%s is not set, %v, and %v", MySQLURLEnv, err, errContainer)
	}
	return dsn, ""
}

// startMySQLContainer runs MySQL 8 in Docker through testcontainers-go's
// MySQL module. The container lives as long as the test process.
func startMySQLContainer() (dsn string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := testcontainers.NewDockerProvider(); err != nil {
		return "", fmt.Errorf("no Docker engine answers (%w)", err)
	}
	c, err := tcmysql.Run(ctx, "mysql:8.4", tcmysql.WithUsername("root"), tcmysql.WithPassword("taskrepo"))
	if err != nil {
		return "", fmt.Errorf("the MySQL container did not start (%w)", err)
	}
	dsn, err = c.ConnectionString(ctx)
	if err != nil {
		return "", fmt.Errorf("container connection string: %w", err)
	}
	return dsn, nil
}

// mysqlAdminExec runs statement on the shared server as its administrator.
func mysqlAdminExec(ctx context.Context, statement string) error {
	return mysqlExec(ctx, mysqlServer.cfg.FormatDSN(), statement)
}

// mysqlExec runs statement on a connection of its own to the server that
// the go-sql-driver DSN dsn names.
func mysqlExec(ctx context.Context, dsn, statement string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return fmt.Errorf("open a MySQL connection: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, statement); err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	return nil
}
