package netproxy_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
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

// client runs path, which sends statements, the last with last in its
// text, on a fresh pool in mode.
func (r *pgRig) client(mode pgx.QueryExecMode, statements int, last string, path func(ctx context.Context, pool *pgxpool.Pool, id int) error) client {
	return client{
		run: func(ctx context.Context, id int) error {
			pool, err := r.pool(ctx, mode)
			if err != nil {
				return err
			}
			defer pool.Close()
			return path(ctx, pool, id)
		},
		probe:      r.probe,
		exists:     r.exists,
		statements: statements,
		last:       last,
	}
}

// sqlClient runs the insertion of sqlInsert on a fresh database/sql handle
// on pgx's driver.
func (r *pgRig) sqlClient(inTx bool, statements int, last string) client {
	c := r.client(pgx.QueryExecModeCacheStatement, statements, last, nil)
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

// exists says, through the direct pool, whether the row id exists.
func (r *pgRig) exists(ctx context.Context, id int) (bool, error) {
	var exists bool
	err := r.direct.QueryRow(ctx, "SELECT EXISTS (SELECT FROM public.probe WHERE id = $1)", id).Scan(&exists)
	return exists, err
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
		// statements is how many statements the path sends in each mode:
		// a Query (begin and commit, and every statement in the simple
		// protocol, a batch in one), a round trip that prepares the
		// insertion (cached), an execution of it (cached and exec).
		statements map[string]int
		last       string
		run        func(ctx context.Context, pool *pgxpool.Pool, id int) error
	}{
		"insert":             {map[string]int{"simple": 1, "cached": 2, "exec": 1}, "insert", pgxInsert},
		"transaction":        {map[string]int{"simple": 3, "cached": 4, "exec": 3}, "commit", pgxTransaction},
		"batch":              {map[string]int{"simple": 1, "cached": 3, "exec": 2}, "insert", pgxBatch},
		"batchInTransaction": {map[string]int{"simple": 3, "cached": 5, "exec": 4}, "commit", pgxBatchInTransaction},
	}
	for modeName, mode := range modes {
		for pathName, path := range paths {
			t.Run(modeName+"/"+pathName, func(t *testing.T) {
				t.Parallel()
				r := newPGRig(t)
				sweepBoth(t, r.proxy, r.client(mode, path.statements[modeName], path.last, path.run))
			})
		}
	}
}

// TestCutAtEachStatementOfDatabaseSQLOnPgx cuts before, then after, each
// statement of an insertion with database/sql on pgx's driver, on the pool
// (a round trip that prepares, an execution) and in a transaction (begin
// and commit around them).
func TestCutAtEachStatementOfDatabaseSQLOnPgx(t *testing.T) {
	t.Parallel()
	for name, inTx := range map[string]bool{"insert": false, "transaction": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newPGRig(t)
			if inTx {
				sweepBoth(t, r.proxy, r.sqlClient(true, 4, "commit"))
			} else {
				sweepBoth(t, r.proxy, r.sqlClient(false, 2, "insert"))
			}
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

// TestAfterLetsTheSyncBehindAnExecuteThrough checks that a cut after an
// execution in the extended protocol lets the Sync behind it through when
// the client sends it apart, for the server commits the implicit
// transaction there, and cuts without one when the client asks for the
// reply with a Flush and waits for it instead.
func TestAfterLetsTheSyncBehindAnExecuteThrough(t *testing.T) {
	t.Parallel()
	for name, synced := range map[string]bool{"sync": true, "flush": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newPGRig(t)
			conn := r.connect(t)
			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			r.proxy.CutAtStatement(1, netproxy.After)
			defer r.proxy.Restore()
			if err := pipelineInsert(ctx, conn.PgConn(), synced); err == nil {
				t.Error("the client got a reply")
			}
			if err := r.proxy.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			if st, fired := r.proxy.Fired(); !fired || st.Message != "Parse" || st.SQL != pgInsert {
				t.Errorf("Fired() = %v, %v; want the insertion", st, fired)
			}
			checkRow(t, r.exists, 1, synced, netproxy.After, 1)
		})
	}
}

// pipelineInsert inserts the row 1 in a pipeline and sends a Sync apart a
// moment later, or else a Flush with the insertion, and then waits for the
// reply.
func pipelineInsert(ctx context.Context, conn *pgconn.PgConn, synced bool) error {
	p := conn.StartPipeline(ctx)
	defer p.Close()
	p.SendQueryParams(pgInsert, [][]byte{[]byte("1")}, nil, nil, nil)
	if !synced {
		p.SendFlushRequest()
	}
	if err := p.Flush(); err != nil {
		return err
	}
	if synced {
		time.Sleep(10 * time.Millisecond)
		if err := p.Sync(); err != nil {
			return err
		}
	}
	_, err := p.GetResults()
	return err
}
