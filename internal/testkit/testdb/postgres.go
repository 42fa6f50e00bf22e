package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/taskrepo/taskrepo/migrations"
)

// server is the PostgreSQL server shared by the tests of one process.
var server struct {
	once     sync.Once
	url      string   // maintenance database URL
	template string   // migrated template database
	cluster  *Cluster // testdb's own server, if it is one; reachable for its reaper's sake
	err      error
	skip     string
}

// Postgres returns a pool on a fresh, migrated database of t's own. Its
// connections have an empty search_path, so that a query which forgets to
// qualify a table fails. The database is dropped when t ends.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Pool(t, PostgresURL(t), 16)
}

// Pool opens a pool of conns connections on dbURL with an empty
// search_path, as Postgres does, and the run-time parameters params, names
// and values in turn; it closes the pool when t ends.
func Pool(t testing.TB, dbURL string, conns int32, params ...string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("testdb: parse URL: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = ""
	for i := 0; i+1 < len(params); i += 2 {
		cfg.ConnConfig.RuntimeParams[params[i]] = params[i+1]
	}
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("testdb: connect: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// PostgresURL creates a fresh, migrated database for t and returns its URL.
// The database is dropped when t ends.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return postgresDatabase(t, true)
}

// EmptyPostgresURL creates a fresh database without taskrepo's tables for t
// and returns its URL. The database is dropped when t ends.
func EmptyPostgresURL(t testing.TB) string {
	t.Helper()
	return postgresDatabase(t, false)
}

// postgresServer starts or finds the shared server once, and skips or
// fails t when there is none.
func postgresServer(t testing.TB) {
	t.Helper()
	server.once.Do(startPostgres)
	if server.skip != "" {
		unavailable(t, RequirePostgresEnv, server.skip)
	}
	if server.err != nil {
		t.Fatalf("testdb: %v", server.err)
	}
}

// postgresDatabase creates a fresh database for t on the shared server,
// copied from the migrated template when migrated, drops it when t ends,
// and returns its URL.
func postgresDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	postgresServer(t)
	name := randomName("taskrepo_test_")
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if migrated {
		create += " TEMPLATE " + pgx.Identifier{server.template}.Sanitize()
	}
	if err := adminExec(context.Background(), server.url, create); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	t.Cleanup(func() {
		drop := fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", pgx.Identifier{name}.Sanitize())
		if err := adminExec(context.Background(), server.url, drop); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	return withDatabase(server.url, name)
}

// startPostgres finds the server and makes sure the template exists.
func startPostgres() {
	server.url = os.Getenv(PostgresURLEnv)
	if server.url == "" {
		server.url, server.skip = sharedPostgres()
		if server.skip != "" {
			return
		}
	}
	server.template, server.err = ensureTemplate(context.Background(), server.url)
}

// sharedPostgres starts the server that the tests of this process share
// when no URL names one, and returns its maintenance URL, or why there is
// none: a cluster of testdb's own when PostgreSQL's server binaries are
// installed (it lives as long as the test process), else a container when
// a Docker engine answers.
func sharedPostgres() (url, skip string) {
	c, err := startPostgresCluster(sharedPostgresSettings...)
	if err == nil {
		server.cluster = c
		return c.AdminURL(), ""
	}
	if !errors.Is(err, errNoOwnServer) {
		return "", fmt.Sprintf("%s is not set and %v", PostgresURLEnv, err)
	}
	url, errContainer := startContainer()
	if errContainer != nil {
		return "", fmt.Sprintf("%s is not set, %v, and %v", PostgresURLEnv, err, errContainer)
	}
	return url, ""
}

// startContainer runs PostgreSQL in Docker through testcontainers-go. The
// container lives as long as the test process (Ryuk removes it).
func startContainer() (dsn string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := testcontainers.NewDockerProvider(); err != nil {
		return "", fmt.Errorf("no Docker engine answers (%w)", err)
	}
	c, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("postgres"), tcpostgres.BasicWaitStrategies())
	if err != nil {
		return "", fmt.Errorf("the PostgreSQL container did not start (%w)", err)
	}
	dsn, err = c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return "", fmt.Errorf("container connection string: %w", err)
	}
	return dsn, nil
}

// ensureTemplate creates a migrated template database named after the hash
// of the migrations, unless it exists. It is built under a temporary name and
// renamed when complete, so that a crashed run never leaves half a template;
// an advisory lock keeps parallel test processes from building it twice.
func ensureTemplate(ctx context.Context, adminURL string) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('taskrepo testdb template'))"); err != nil {
		return "", fmt.Errorf("lock template: %w", err)
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists {
		return name, nil
	}
	building := randomName("taskrepo_build_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	if err := migrate(ctx, withDatabase(adminURL, building)); err != nil {
		return "", err
	}
	rename := fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", pgx.Identifier{building}.Sanitize(), pgx.Identifier{name}.Sanitize())
	if _, err := conn.Exec(ctx, rename); err != nil {
		return "", fmt.Errorf("rename template: %w", err)
	}
	return name, nil
}

// templateName names the template after a hash of the embedded migrations,
// so that a changed schema gets a new template.
func templateName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Files, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return "taskrepo_template_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// migrate applies taskrepo's PostgreSQL migrations to the database dbURL.
func migrate(ctx context.Context, dbURL string) error {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return fmt.Errorf("open %s: %w", redact(dbURL), err)
	}
	defer db.Close()
	return migrations.Up(ctx, db, migrations.Postgres)
}

// adminExec runs statement on a connection of its own to adminURL.
func adminExec(ctx context.Context, adminURL, statement string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(adminURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, statement); err != nil {
		return fmt.Errorf("%s: %w", statement, err)
	}
	return nil
}

// withDatabase returns adminURL pointing at database name.
func withDatabase(adminURL, name string) string {
	u, err := url.Parse(adminURL)
	if err != nil {
		return adminURL
	}
	u.Path = "/" + name
	return u.String()
}

// redact returns rawURL without its password, for messages.
func redact(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil {
		return u.Redacted()
	}
	return "the database URL"
}
