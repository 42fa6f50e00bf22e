//go:build heavy

package testdb_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// TestReplicatedKeepsEveryCommitAcrossFailovers commits rows through the
// pair's multi-host URL, fails over, and finds every row on the new
// primary; twice, so that the rejoined node is promoted in turn. The
// standby answers reads and refuses writes. A heavy test (CI's step
// heavy): faults' failover tests run the harness in the test command.
func TestReplicatedKeepsEveryCommitAcrossFailovers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := testdb.OwnReplicated(t, true)
	exec(t, r.URL(), "CREATE TABLE public.kept (n int PRIMARY KEY)")
	for round := range 2 {
		for i := range 50 {
			exec(t, r.URL(), "INSERT INTO public.kept VALUES ($1)", round*50+i)
		}
		standby := connectPostgres(t, r.StandbyURL())
		if _, err := standby.Exec(ctx, "INSERT INTO public.kept VALUES (-1)"); err == nil {
			t.Fatal("the standby took a write")
		}
		old := r.Primary().Addr()
		if err := r.Failover(ctx); err != nil {
			t.Fatal(err)
		}
		if r.Primary().Addr() == old {
			t.Fatalf("the primary is still %s after a failover", old)
		}
		var n int
		if err := connectPostgres(t, r.URL()).QueryRow(ctx, "SELECT count(*) FROM public.kept").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := (round + 1) * 50; n != want {
			t.Fatalf("%d rows on the new primary, want the %d committed", n, want)
		}
		if err := r.Rejoin(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// exec runs statement with args on a connection of its own to url.
func exec(t *testing.T, url, statement string, args ...any) {
	t.Helper()
	if _, err := connectPostgres(t, url).Exec(t.Context(), statement, args...); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}
