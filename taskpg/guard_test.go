package taskpg_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// cancelRig is a pool of one connection that goes through a proxy, beside a
// direct one that holds the task table locked while a call through the
// proxy waits.
type cancelRig struct {
	proxy   *netproxy.Proxy
	proxied *pgxpool.Pool
	direct  *pgxpool.Pool
	repo    *taskpg.Repository
}

func newCancelRig(t *testing.T) *cancelRig {
	t.Helper()
	dbURL := testdb.PostgresURL(t)
	proxy, proxied, err := netproxy.ForURL(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	r := &cancelRig{proxy: proxy, proxied: testdb.Pool(t, proxied, 1), direct: testdb.Pool(t, dbURL, 2)}
	r.repo = newRepo(t, r.direct, "a")
	if _, err := r.repo.Initialize(t.Context(), r.direct, "t"); err != nil {
		t.Fatal(err)
	}
	// The pool's one connection, made before the proxy refuses, and its
	// push prepared: parsing an INSERT locks the table, and a blocked
	// push is to have sent its whole round trip.
	push(t, r.repo, r.proxied, "t", taskapi.Append, ids("warm")...)
	return r
}

// blockedPush pushes "late" through the proxy while the task table is
// locked against writes, with a context that ends after 200 ms; meanwhile during runs.
// The lock goes once the push has returned, and blockedPush returns the
// tasks of "t" and the push's error once the database is done with what it got.
func (r *cancelRig) blockedPush(t *testing.T, ctx context.Context, during func()) ([]taskapi.State, error) {
	t.Helper()
	lock, err := r.direct.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(context.WithoutCancel(t.Context()))
	// EXCLUSIVE lets the push plan its statements and stops its INSERT.
	if _, err := lock.Exec(t.Context(), "LOCK TABLE public.task IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	during()
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, pushErr := r.repo.Push(ctx, r.proxied, "t", taskapi.Append, taskapi.Creation{Identifier: "late"})
	if err := lock.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The lock of a new transaction on the table is granted once the
	// statement that waited before it is done: committed or rolled back.
	barrier, err := r.direct.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer barrier.Rollback(context.WithoutCancel(t.Context()))
	if _, err := barrier.Exec(t.Context(), "LOCK TABLE public.task IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	_ = barrier.Rollback(t.Context())
	return states(t, r.repo, r.direct, "t"), pushErr
}

// A call given up on whose first cancel request does not reach the server
// (a pooler that could not pass it on, and closed the request's connection
// as one that did) asks again, and its statement is stopped: the push
// changed nothing. Before, the call waited for the first request to work
// until its patience ran out, cut its connection and left the outcome
// unknown.
func TestALostCancelRequestIsSentAgain(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t)
	tasks, err := r.blockedPush(t, t.Context(), func() {
		r.proxy.Refuse()
		time.AfterFunc(500*time.Millisecond, r.proxy.Restore)
	})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, taskapi.ErrUnavailable) {
		t.Errorf("Push blocked past its deadline: error = %v, want %v and a known outcome", err, context.DeadlineExceeded)
	}
	if len(tasks) != 1 {
		t.Errorf("after a Push stopped at its deadline the topic holds %v, want the one pushed before", tasks)
	}
}

// A call given up on whose server cannot be asked to stop the statement
// within the call's patience cuts its connection, and says that its
// outcome is unknown (taskapi.ErrUnavailable besides the context's
// error): a statement it left may commit once its lock is free. The
// context's bound (taskapi.Bounded) makes the patience
// short.
func TestACallThatCouldNotStopItsStatementSaysItsOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	r := newCancelRig(t)
	ctx := taskapi.Bounded(t.Context(), time.Second)
	tasks, err := r.blockedPush(t, ctx, r.proxy.Refuse)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, taskapi.ErrUnavailable) {
		t.Errorf("Push whose statement could not be stopped: error = %v, want %v and %v", err, context.DeadlineExceeded, taskapi.ErrUnavailable)
	}
	if len(tasks) != 2 {
		t.Errorf("the topic holds %v, want the push left running committed once the lock went, beside the one before", tasks)
	}
}
