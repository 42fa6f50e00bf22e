package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/taskrepo/taskrepo/migrations"
)

// defaultFile is the SQLite file taskctl uses when no database is named.
const defaultFile = "taskrepo.db"

// sqlitePragmas are the connection settings taskansi's documentation asks
// for; a URL's own query parameters come first.
var sqlitePragmas = url.Values{
	"_pragma": {"busy_timeout(10000)", "journal_mode(WAL)"},
	"_txlock": {"immediate"},
}

// target is a parsed database URL.
type target struct {
	dialect migrations.Dialect
	dsn     string // what the driver opens
	file    string // SQLite: the database file
	shown   string // the URL as the user may see it: no password
	limits
}

// limits are how a command uses its connections: the zero value leaves the
// drivers' defaults (pgxpool: as many as the host has cores, at least 4;
// database/sql: no bound).
type limits struct {
	pool        int    // the most connections open at once
	application string // PostgreSQL: the application_name, unless the URL names one
	// readOnly makes every transaction of the connections read-only, on
	// the server (--read-database): a read that tried to write would fail
	// there rather than write. On PostgreSQL each transaction begins READ
	// ONLY (transactPG) rather than the session carrying
	// default_transaction_read_only: a pooler in transaction mode
	// (PgBouncer) refuses that startup parameter, and would drop it from
	// its server connections if told to ignore it.
	readOnly bool
}

// parseTarget parses a database URL; an empty one names defaultFile.
func parseTarget(raw string) (target, error) {
	if raw == "" {
		raw = "sqlite:" + defaultFile
	}
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, usagef("bad database URL: %v", redactErr(err, raw))
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		if _, err := pgxpool.ParseConfig(raw); err != nil {
			return target{}, usagef("bad PostgreSQL URL %s: %v", u.Redacted(), redactErr(err, raw))
		}
		return target{dialect: migrations.Postgres, dsn: raw, shown: u.Redacted()}, nil
	case "mysql", "mariadb":
		return mysqlTarget(u)
	case "sqlite", "sqlite3", "file":
		return sqliteTarget(u)
	case "":
		return target{}, usagef("database URL %q has no scheme: use postgres://, mysql:// or sqlite:FILE", raw)
	}
	return target{}, usagef("unsupported database URL scheme %q: use postgres://, mysql:// or sqlite:FILE", u.Scheme)
}

// redactErr keeps a password in raw out of err's text.
func redactErr(err error, raw string) string {
	msg := err.Error()
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

func sqliteTarget(u *url.URL) (target, error) {
	file := u.Opaque
	if file == "" {
		file = u.Host + u.Path
	}
	if file == "" {
		return target{}, usagef("SQLite URL %q names no file: use sqlite:path/to/file.db", u.String())
	}
	query := u.Query()
	for key, values := range sqlitePragmas {
		if _, given := query[key]; !given {
			query[key] = values
		}
	}
	return target{dialect: migrations.SQLite, dsn: "file:" + file + "?" + query.Encode(), file: file, shown: "sqlite:" + file}, nil
}

func mysqlTarget(u *url.URL) (target, error) {
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", u.Host
	if u.Port() == "" {
		cfg.Addr = net.JoinHostPort(u.Hostname(), "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	if u.Hostname() == "" || cfg.DBName == "" {
		return target{}, usagef("MySQL URL %s needs a host and a database: mysql://user:password@host:3306/database", u.Redacted())
	}
	dsn := cfg.FormatDSN()
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return target{}, usagef("bad MySQL URL %s: %v", u.Redacted(), err)
	}
	return target{dialect: migrations.MySQL, dsn: dsn, shown: u.Redacted()}, nil
}

// connectTimeout bounds how long taskctl tries to reach a database.
const connectTimeout = 10 * time.Second

// connection is an open database: a pgx pool for PostgreSQL, a
// database/sql handle otherwise, and a database/sql handle for the
// migrations either way.
type connection struct {
	target
	pool *pgxpool.Pool // PostgreSQL only
	db   *sql.DB
}

// connect opens t and checks that the server answers. A SQLite file must
// exist unless create is set.
func connect(ctx context.Context, t target, create bool) (*connection, error) {
	if t.dialect == migrations.SQLite && !create {
		if _, err := os.Stat(t.file); errors.Is(err, os.ErrNotExist) {
			return nil, unreachable(fmt.Errorf("no database file %s: run 'taskctl migrate' (or 'taskctl demo') to create it, or name another with --database", t.file))
		}
	}
	c := &connection{target: t}
	var err error
	if t.dialect == migrations.Postgres {
		if c.pool, err = openPool(ctx, t); err == nil {
			c.db = stdlib.OpenDBFromPool(c.pool)
		}
	} else {
		if c.db, err = openDB(t); err == nil && t.pool > 0 {
			c.db.SetMaxOpenConns(t.pool)
			c.db.SetMaxIdleConns(t.pool)
		}
	}
	if err == nil {
		pingCtx, cancel := context.WithTimeout(ctx, connectTimeout)
		err = c.db.PingContext(pingCtx)
		cancel()
	}
	if err != nil {
		c.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, unreachable(fmt.Errorf("cannot reach %s: %v", t.shown, redactErr(err, t.dsn)))
	}
	return c, nil
}

// openPool opens a pgx pool on t, with t's limits.
func openPool(ctx context.Context, t target) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(t.dsn)
	if err != nil {
		return nil, err
	}
	if t.pool > 0 {
		cfg.MaxConns = int32(t.pool)
	}
	if _, named := cfg.ConnConfig.RuntimeParams["application_name"]; !named && t.application != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = t.application
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

func (c *connection) close() {
	if c.db != nil {
		_ = c.db.Close() // the command is done: there is nothing left to write
	}
	if c.pool != nil {
		c.pool.Close()
	}
}

// schemaVersion returns the version of the database's taskrepo schema (0
// when it has none) and the version this taskctl brings. It reads the
// version table itself: goose would create the table, and a read must
// change nothing.
func (c *connection) schemaVersion(ctx context.Context) (current, latest int64, err error) {
	p, err := migrations.NewProvider(c.db, c.dialect)
	if err != nil {
		return 0, 0, err
	}
	sources := p.ListSources()
	latest = sources[len(sources)-1].Version
	var v sql.NullInt64
	query := "SELECT max(version_id) FROM " + migrations.VersionTable + " WHERE is_applied"
	if err := c.db.QueryRowContext(ctx, query).Scan(&v); err != nil {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		if err := c.db.PingContext(ctx); err != nil {
			return 0, 0, err // the database does not answer (serve's /healthz says so)
		}
		return 0, latest, nil // it answers, without a version table: never migrated
	}
	return v.Int64, latest, nil
}
