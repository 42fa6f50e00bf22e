package netproxy_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
)

// pgUpdate moves the row 1 of probe to 2.
const pgUpdate = "UPDATE public.probe SET id = $1 WHERE id = $2"

// pgIdleTimeout is the idle_in_transaction_session_timeout of a session
// whose UPDATE a test freezes: far longer than the test takes to check the
// row's lock once the UPDATE has executed.
const pgIdleTimeout = 5 * time.Second

// session returns the state and the last query of the server's session
// pid, as another session sees them, or false when it has ended.
func (r *pgRig) session(ctx context.Context, pid uint32) (state, query string, alive bool, err error) {
	const q = "SELECT state, query FROM pg_catalog.pg_stat_activity WHERE pid = $1"
	err = r.direct.QueryRow(ctx, q, int64(pid)).Scan(&state, &query)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	return state, query, err == nil, err
}

// lockRow locks the row id of probe without waiting, in a transaction of
// another session, which it then ends.
func (r *pgRig) lockRow(ctx context.Context, id int) error {
	return pgx.BeginFunc(ctx, r.direct, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "SELECT FROM public.probe WHERE id = $1 FOR UPDATE NOWAIT", id)
		return err
	})
}

// checkExists checks, through the direct pool, whether the row id exists.
func (r *pgRig) checkExists(t *testing.T, id int, want bool) {
	t.Helper()
	got, err := r.exists(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the row %d exists: %v, want %v", id, got, want)
	}
}

// TestFreezeBeforeHoldsOneConnectionBack checks that a statement frozen
// Before never reaches the server, whose session outlives the client's
// giving up, while another connection, and new ones, carry on, and that
// Restore thaws nothing.
func TestFreezeBeforeHoldsOneConnectionBack(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	a, b := r.connect(t), r.connect(t)
	pid := a.PgConn().PID()
	r.proxy.FreezeAt(sqlStarts("INSERT"), netproxy.Before)
	outcome := gaveUp(t, giveUp, func(ctx context.Context) error {
		_, err := a.Exec(ctx, pgInsert, 1)
		return err
	})
	if st := fired(t, r.proxy); st.Message != "Parse" || st.SQL != pgInsert {
		t.Errorf("Fired() = %v, want the insertion", st)
	}
	if _, err := b.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("the other connection: %v", err)
	}
	if err := r.probe(ctx); err != nil {
		t.Errorf("a new connection: %v", err)
	}
	await(t, outcome)
	r.proxy.Restore()
	_, query, alive, err := r.session(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if !alive || query == pgInsert {
		t.Errorf("the server's session: alive %v, last query %q; want alive, without the insertion", alive, query)
	}
	r.checkExists(t, 1, false)
	checkFrozen(t, r.proxy, 1)
}

// TestFreezeAfterAnUpdateKeepsItsLock checks that an UPDATE frozen After
// executes, in the client's transaction, which keeps the row locked until
// the server's idle_in_transaction_session_timeout ends the session and
// rolls it back; and that the client, not told, waits until its
// deadline.
func TestFreezeAfterAnUpdateKeepsItsLock(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	if _, err := r.direct.Exec(ctx, "INSERT INTO public.probe VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	a := r.connect(t)
	pid := a.PgConn().PID()
	if _, err := a.Exec(ctx, "SET idle_in_transaction_session_timeout = '"+pgIdleTimeout.String()+"'"); err != nil {
		t.Fatal(err)
	}
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.proxy.FreezeAt(sqlStarts("UPDATE"), netproxy.After)
	outcome := gaveUp(t, 2*pgIdleTimeout, func(ctx context.Context) error {
		_, err := tx.Exec(ctx, pgUpdate, pgx.QueryExecModeExec, 2, 1)
		return err
	})
	eventually(t, "the server has executed the update", func(ctx context.Context) (bool, error) {
		state, query, _, err := r.session(ctx, pid)
		return state == "idle in transaction" && query == pgUpdate, err
	})
	var pgErr *pgconn.PgError
	if err := r.lockRow(ctx, 1); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Errorf("locking the updated row: %v, want 55P03", err)
	}
	eventually(t, "the server ends the session", func(ctx context.Context) (bool, error) {
		_, _, alive, err := r.session(ctx, pid)
		return !alive, err
	})
	await(t, outcome)
	if err := r.lockRow(ctx, 1); err != nil {
		t.Errorf("locking the row once the session ended: %v", err)
	}
	r.checkExists(t, 1, true)
	r.checkExists(t, 2, false)
}

// TestFreezeAfterACommitCommits checks that a COMMIT frozen After commits
// while the client gets no answer.
func TestFreezeAfterACommitCommits(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	tx, err := r.connect(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, pgInsert, 1); err != nil {
		t.Fatal(err)
	}
	r.proxy.FreezeAt(sqlStarts("COMMIT"), netproxy.After)
	outcome := gaveUp(t, giveUp, tx.Commit)
	eventually(t, "the server commits", func(ctx context.Context) (bool, error) {
		return r.exists(ctx, 1)
	})
	await(t, outcome)
	if st, ok := r.proxy.Fired(); !ok || st != (netproxy.Statement{N: 1, Message: "Query", SQL: "commit"}) {
		t.Errorf("Fired() = %v, %v; want the commit", st, ok)
	}
	checkFrozen(t, r.proxy, 1)
}

// TestFreezeAtStatementFreezesOnlyItsConnection checks that statements
// count on every connection, and that the freeze holds back only the
// connection of the nth, unlike a cut.
func TestFreezeAtStatementFreezesOnlyItsConnection(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	a, b := r.connect(t), r.connect(t)
	r.proxy.FreezeAtStatement(2, netproxy.Before)
	if _, err := a.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("statement 1: %v", err)
	}
	outcome := gaveUp(t, giveUp, func(ctx context.Context) error {
		_, err := b.Exec(ctx, "SELECT 2")
		return err
	})
	fired(t, r.proxy)
	if _, err := a.Exec(ctx, "SELECT 3"); err != nil {
		t.Errorf("the other connection after the freeze: %v", err)
	}
	await(t, outcome)
	want := []netproxy.Statement{{N: 1, Message: "Query", SQL: "SELECT 1"}, {N: 2, Message: "Query", SQL: "SELECT 2"}}
	if got := r.proxy.Statements(); !slices.Equal(got, want) {
		t.Errorf("Statements() = %v, want %v", got, want)
	}
	checkFrozen(t, r.proxy, 1)
}

// TestFreezeThatNeverMatchesLetsEverythingThrough checks that a freeze
// armed at no statement leaves transactions and batches working, and
// counts their statements.
func TestFreezeThatNeverMatchesLetsEverythingThrough(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	r.proxy.FreezeAt(func(netproxy.Statement) bool { return false }, netproxy.After)
	paths := []func(context.Context, *pgxpool.Pool, int) error{pgxTransaction, pgxBatch}
	for i, path := range paths {
		if err := r.client(pgx.QueryExecModeCacheStatement, 0, "", path).run(t.Context(), i+1); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int{1, 2, 10002} {
		r.checkExists(t, id, true)
	}
	if st, ok := r.proxy.Fired(); ok {
		t.Errorf("Fired() = %v, true", st)
	}
	if got := r.proxy.Statements(); len(got) != 7 {
		t.Errorf("Statements() = %v, want the 4 of the transaction and the 3 of the batch", got)
	}
	checkFrozen(t, r.proxy, 0)
}

// TestRestoreDisarmsAFreeze checks that a freeze that Restore disarmed
// before it fired never does.
func TestRestoreDisarmsAFreeze(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	a := r.connect(t)
	r.proxy.FreezeAt(sqlStarts("SELECT"), netproxy.Before)
	r.proxy.Restore()
	if _, err := a.Exec(t.Context(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if st, ok := r.proxy.Fired(); ok {
		t.Errorf("Fired() = %v, true", st)
	}
}

// TestCutEndsFrozenConnections checks that Cut drops a frozen connection
// too: its client, which has no deadline, learns of it, and the server
// ends the session.
func TestCutEndsFrozenConnections(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	a := r.connect(t)
	r.proxy.FreezeAt(sqlStarts("SELECT"), netproxy.After)
	done := make(chan error, 1)
	go func() {
		_, err := a.Exec(t.Context(), "SELECT 1")
		done <- err
	}()
	fired(t, r.proxy)
	r.proxy.Cut()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the client got its reply")
		}
	case <-time.After(patience):
		t.Fatal("the client did not learn of the cut")
	}
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := r.proxy.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	checkFrozen(t, r.proxy, 0)
}

// pgBigReply is a query whose reply, 50 MB, fills any socket's buffers.
const pgBigReply = "SELECT repeat('x', 1000) FROM generate_series(1, 50000)"

// pgQuery returns a simple Query message of sql.
func pgQuery(sql string) []byte {
	msg := binary.BigEndian.AppendUint32([]byte{'Q'}, uint32(4+len(sql)+1))
	return append(append(msg, sql...), 0)
}

// TestFrozenConnectionSwallowsBothWays checks that the proxy reads and
// discards what either side of a frozen connection sends, so that neither
// blocks: the server's whole reply to the query frozen After, and what the
// client sends next; and that the client reads nothing, not even the end
// of the stream.
func TestFrozenConnectionSwallowsBothWays(t *testing.T) {
	t.Parallel()
	r := newPGRig(t)
	ctx := t.Context()
	conn, err := pgconn.Connect(ctx, r.proxied)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	raw := conn.Conn()
	if err := raw.SetDeadline(time.Now().Add(patience)); err != nil {
		t.Fatal(err)
	}
	r.proxy.FreezeAt(sqlStarts(pgBigReply), netproxy.After)
	if _, err := raw.Write(pgQuery(pgBigReply)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the server has sent its whole reply", func(ctx context.Context) (bool, error) {
		state, last, _, err := r.session(ctx, conn.PID())
		return state == "idle" && last == pgBigReply, err
	})
	if _, err := raw.Write(make([]byte, 32<<20)); err != nil {
		t.Errorf("the client's writes: %v", err)
	}
	if err := raw.SetReadDeadline(time.Now().Add(giveUp)); err != nil {
		t.Fatal(err)
	}
	if n, err := raw.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the client read %d bytes, %v; want nothing until its deadline", n, err)
	}
	checkFrozen(t, r.proxy, 1)
}
