package netproxy_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/netproxy"
	"github.com/taskrepo/taskrepo/internal/testdb"
)

// pgRig is a PostgreSQL database with a table probe, reached directly and
// through a proxy.
type pgRig struct {
	direct  *pgxpool.Pool
	proxy   *netproxy.Proxy
	proxied string // the URL through the proxy
}

func newPGRig(t *testing.T) *pgRig {
	t.Helper()
	dbURL := testdb.EmptyPostgresURL(t)
	proxy, proxied, err := netproxy.ForURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	r := &pgRig{direct: testdb.Pool(t, dbURL, 2), proxy: proxy, proxied: proxied}
	if _, err := r.direct.Exec(t.Context(), "CREATE TABLE public.probe (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return r
}

// pool opens a pool through the proxy whose queries run in mode, and which
// never pings, so that a run sends the same statements whatever its pace.
func (r *pgRig) pool(ctx context.Context, mode pgx.QueryExecMode) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(r.proxied)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.DefaultQueryExecMode = mode
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	return pgxpool.NewWithConfig(ctx, cfg)
}

// client runs path on a fresh pool in mode.
func (r *pgRig) client(mode pgx.QueryExecMode, last string, path func(ctx context.Context, pool *pgxpool.Pool, id int) error) client {
	return client{
		run: func(ctx context.Context, id int) error {
			pool, err := r.pool(ctx, mode)
			if err != nil {
				return err
			}
			defer pool.Close()
			return path(ctx, pool, id)
		},
		probe: r.probe,
		exists: func(ctx context.Context, id int) (bool, error) {
			var exists bool
			err := r.direct.QueryRow(ctx, "SELECT EXISTS (SELECT FROM public.probe WHERE id = $1)", id).Scan(&exists)
			return exists, err
		},
		last: last,
	}
}

// sqlClient runs the insertion of sqlInsert on a fresh database/sql handle
// on pgx's driver.
func (r *pgRig) sqlClient(inTx bool, last string) client {
	c := r.client(pgx.QueryExecModeCacheStatement, last, nil)
	c.run = func(ctx context.Context, id int) error {
		db, err := r.sqlDB()
		if err != nil {
			return err
		}
		defer db.Close()
		return sqlInsert(ctx, db, inTx, "$1", id)
	}
	return c
}

// sqlDB opens a database/sql handle through the proxy on pgx's driver,
// which never pings.
func (r *pgRig) sqlDB() (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(r.proxied)
	if err != nil {
		return nil, err
	}
	never := stdlib.OptionShouldPing(func(context.Context, stdlib.ShouldPingParams) bool { return false })
	return stdlib.OpenDB(*cfg, never), nil
}

func (r *pgRig) probe(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, r.proxied)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT 1")
	return err
}

const pgInsert = "INSERT INTO public.probe VALUES ($1)"

func pgxInsert(ctx context.Context, pool *pgxpool.Pool, id int) error {
	_, err := pool.Exec(ctx, pgInsert, id)
	return err
}

func pgxTransaction(ctx context.Context, pool *pgxpool.Pool, id int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, pgInsert, id)
		return err
	})
}

// pgxBatch inserts the row id and another in one batch.
func pgxBatch(ctx context.Context, pool *pgxpool.Pool, id int) error {
	return pool.SendBatch(ctx, twoInserts(id)).Close()
}

func pgxBatchInTransaction(ctx context.Context, pool *pgxpool.Pool, id int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, twoInserts(id)).Close()
	})
}

func twoInserts(id int) *pgx.Batch {
	b := &pgx.Batch{}
	b.Queue(pgInsert, id)
	b.Queue(pgInsert, id+10000)
	return b
}

// TestCutAtEachStatementOfPgx cuts before, then after, each statement of
// an insertion on a pool and in a transaction, alone and in a batch, in
// the simple protocol, the extended one with pgx's statement cache (which
// prepares first) and the extended one without.
func TestCutAtEachStatementOfPgx(t *testing.T) {
	t.Parallel()
	modes := map[string]pgx.QueryExecMode{
		"simple": pgx.QueryExecModeSimpleProtocol,
		"cached": pgx.QueryExecModeCacheStatement,
		"exec":   pgx.QueryExecModeExec,
	}
	paths := map[string]struct {
		last string
		run  func(ctx context.Context, pool *pgxpool.Pool, id int) error
	}{
		"insert":             {"insert", pgxInsert},
		"transaction":        {"commit", pgxTransaction},
		"batch":              {"insert", pgxBatch},
		"batchInTransaction": {"commit", pgxBatchInTransaction},
	}
	for modeName, mode := range modes {
		for pathName, path := range paths {
			t.Run(modeName+"/"+pathName, func(t *testing.T) {
				t.Parallel()
				r := newPGRig(t)
				sweepBoth(t, r.proxy, r.client(mode, path.last, path.run))
			})
		}
	}
}

// TestCutAtEachStatementOfDatabaseSQLOnPgx cuts before, then after, each
// statement of an insertion with database/sql on pgx's driver, on the pool
// and in a transaction.
func TestCutAtEachStatementOfDatabaseSQLOnPgx(t *testing.T) {
	t.Parallel()
	for name, inTx := range map[string]bool{"insert": false, "transaction": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newPGRig(t)
			last := map[bool]string{false: "insert", true: "commit"}[inTx]
			sweepBoth(t, r.proxy, r.sqlClient(inTx, last))
		})
	}
}

// TestStatementsOfEveryConnectionCount checks that statements count on
// every connection from the moment of arming, those open before
// included, and that a cut drops every connection.
func TestStatementsOfEveryConnectionCount(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	a, b := r.connect(t), r.connect(t)
	r.proxy.CutAtStatement(2, netproxy.Before)
	defer r.proxy.Restore()
	if _, err := a.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("statement 1: %v", err)
	}
	if _, err := b.Exec(ctx, "SELECT 2"); err == nil {
		t.Fatal("statement 2 went through")
	}
	if _, err := a.Exec(ctx, "SELECT 3"); err == nil {
		t.Error("the other connection carried on after the cut")
	}
	st, fired := r.proxy.Fired()
	want := netproxy.Statement{N: 2, Message: "Query", SQL: "SELECT 2"}
	if !fired || st != want {
		t.Errorf("Fired() = %v, %v; want %v, true", st, fired, want)
	}
}

// TestPostgresSessionsStayInPlaintext checks that a client that would
// encrypt if it could, on a server that can, talks in plaintext through
// the proxy, which counts its statements.
func TestPostgresSessionsStayInPlaintext(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	u, err := url.Parse(r.proxied)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", "prefer")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	r.proxy.CutAtStatement(2, netproxy.Before)
	defer r.proxy.Restore()
	const query = "SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()"
	var ssl bool
	if err := conn.QueryRow(t.Context(), query, pgx.QueryExecModeSimpleProtocol).Scan(&ssl); err != nil {
		t.Fatal(err)
	}
	if ssl {
		t.Error("the session is encrypted")
	}
	if got := r.proxy.Statements(); len(got) != 1 || got[0].SQL != query {
		t.Errorf("Statements() = %v, want the query", got)
	}
}

// connect opens a connection through the proxy, closed when t ends.
func (r *pgRig) connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), r.proxied)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
