//go:build heavy

package testdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// TestAutoFailoverKeepsEveryCommit commits rows through the formation's
// multi-host URL, crashes the primary's node, writes again once the
// monitor promoted the standby, recovers the crashed node as the standby,
// switches over, and finds every row on the primary of the end. A heavy
// test: faults' TestAutoFailoverLosesNothingCommitted puts load on it.
func TestAutoFailoverKeepsEveryCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := testdb.OwnAutoFailover(t, true)
	exec(t, f.URL(), "CREATE TABLE public.kept (n int PRIMARY KEY)")
	insert := func(n int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			err := tryExec(ctx, f.URL(), "INSERT INTO public.kept VALUES ($1) ON CONFLICT DO NOTHING", n)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("insert %d: %v", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	insert(1)
	old, err := f.PrimaryAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	insert(2)
	if err := f.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if now, err := f.PrimaryAddr(ctx); err != nil || now == old {
		t.Fatalf("the primary after the crash is %s (%v), was %s", now, err, old)
	}
	insert(3)
	if err := f.Switchover(ctx); err != nil {
		t.Fatal(err)
	}
	if now, err := f.PrimaryAddr(ctx); err != nil || now != old {
		t.Fatalf("the primary after the switchover is %s (%v), want %s back", now, err, old)
	}
	insert(4)
	var n int
	if err := connectPostgres(t, f.URL()).QueryRow(ctx, "SELECT count(*) FROM public.kept").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("%d rows on the primary, want the 4 committed", n)
	}
}

// tryExec runs statement with args on a connection of its own to url.
func tryExec(ctx context.Context, url, statement string, args ...any) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, statement, args...)
	return err
}
