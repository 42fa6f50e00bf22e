package netproxy_test

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
)

// patience bounds each run of a code path, and the wait for the server to
// end the sessions that a cut dropped.
const patience = 30 * time.Second

// A client is a way to run a code path through a proxy, and to check its
// outcome around it.
type client struct {
	// run opens a fresh client through the proxy, runs the code path,
	// which inserts the row id, closes the client and returns the error of
	// the code path.
	run func(ctx context.Context, id int) error
	// probe opens a fresh connection through the proxy and runs a query.
	probe func(ctx context.Context) error
	// exists says, through a connection of its own, whether the row id
	// exists.
	exists func(ctx context.Context, id int) (bool, error)
	// statements is how many statements the code path sends, and last is
	// what the text of the last one holds.
	statements int
	last       string
}

// A run is the outcome of one run of a code path with a cut armed.
type run struct {
	id    int
	err   error
	fired netproxy.Statement
}

// sweep runs the code path of c with a cut in mode at statement n = 1, 2,
// … until a run in which the cut does not fire. Every run in which it
// fires must fail, leave the proxy refusing new connections until
// Restore, and leave the row only when the cut came after the last
// statement; the run in which it does not must succeed, and its
// statements be those at which the cuts fired before.
func sweep(t *testing.T, p *netproxy.Proxy, c client, mode netproxy.Mode) {
	t.Helper()
	var runs []run
	for n := 1; ; n++ {
		if n > 20 {
			t.Fatalf("the cut %v statement %d still fired", mode, n)
		}
		r, fired := cutRun(t, p, c, int(mode)*100+n, n, mode)
		if !fired {
			checkSweep(t, p, c, mode, runs, r)
			return
		}
		runs = append(runs, r)
	}
}

// cutRun runs the code path of c once with a cut in mode at statement n,
// and restores the proxy.
func cutRun(t *testing.T, p *netproxy.Proxy, c client, id, n int, mode netproxy.Mode) (run, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	p.CutAtStatement(n, mode)
	r := run{id: id, err: c.run(ctx, id)}
	if err := p.WaitIdle(ctx); err != nil {
		t.Fatalf("the server did not end the sessions the cut dropped: %v", err)
	}
	var fired bool
	r.fired, fired = p.Fired()
	if fired {
		t.Logf("cut %v statement %d: %v; the client got: %v", mode, n, r.fired, r.err)
		if c.probe(ctx) == nil {
			t.Errorf("cut %v statement %d: a new connection went through before Restore", mode, n)
		}
	}
	p.Restore()
	return r, fired
}

// checkSweep checks the runs of a sweep, those in which the cut fired and
// last, the one in which it did not.
func checkSweep(t *testing.T, p *netproxy.Proxy, c client, mode netproxy.Mode, runs []run, last run) {
	t.Helper()
	all := p.Statements()
	if last.err != nil {
		t.Fatalf("without a cut: %v", last.err)
	}
	if len(all) != len(runs) {
		t.Fatalf("the code path sent %d statements %v, the cut fired at %d", len(all), all, len(runs))
	}
	if len(all) != c.statements {
		t.Errorf("the code path sent %d statements %v, want %d", len(all), all, c.statements)
	}
	if !strings.Contains(strings.ToLower(all[len(all)-1].SQL), c.last) {
		t.Errorf("the last statement is %v, want one with %q", all[len(all)-1], c.last)
	}
	want := append(runs, last)
	for i, r := range want {
		if i < len(runs) && !sameStatement(r.fired, all[i]) {
			t.Errorf("the cut %v statement %d fired at %v, want %v", mode, i+1, r.fired, all[i])
		}
		if i < len(runs) && r.err == nil {
			t.Errorf("cut %v statement %d (%v): the client got no error", mode, i+1, all[i])
		}
		committed := i == len(runs) || (mode == netproxy.After && i == len(runs)-1)
		checkRow(t, c.exists, r.id, committed, mode, i+1)
	}
}

// sameStatement says whether a and b are the same statement but for the
// numbers in their text, which the simple protocol interpolates.
func sameStatement(a, b netproxy.Statement) bool {
	a.SQL, b.SQL = numbers.ReplaceAllString(a.SQL, "#"), numbers.ReplaceAllString(b.SQL, "#")
	return a == b
}

var numbers = regexp.MustCompile(`[0-9]+`)

// checkRow checks that the row of the run cut in mode at statement n
// exists if and only if the run committed it.
func checkRow(t *testing.T, exists func(context.Context, int) (bool, error), id int, committed bool, mode netproxy.Mode, n int) {
	t.Helper()
	got, err := exists(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got != committed {
		t.Errorf("cut %v statement %d: the row exists: %v, want %v", mode, n, got, committed)
	}
}

// sweepBoth sweeps the code path of c with cuts before and after each
// statement.
func sweepBoth(t *testing.T, p *netproxy.Proxy, c client) {
	t.Helper()
	for _, mode := range []netproxy.Mode{netproxy.Before, netproxy.After} {
		sweep(t, p, c, mode)
	}
}

// sqlInsert inserts the row id with database/sql, on the pool or in a
// transaction, with a statement whose parameter is placeholder.
func sqlInsert(ctx context.Context, db *sql.DB, inTx bool, placeholder string, id int) error {
	insert := "INSERT INTO probe VALUES (" + placeholder + ")"
	if !inTx {
		_, err := db.ExecContext(ctx, insert, id)
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, insert, id); err != nil {
		return err
	}
	return tx.Commit()
}

// sqlExists says whether the row id exists, with database/sql.
func sqlExists(ctx context.Context, db *sql.DB, query string, id int) (bool, error) {
	var exists bool
	err := db.QueryRowContext(ctx, query, id).Scan(&exists)
	return exists, err
}
