package integration_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// cancelRounds is how many running tasks TestACancellationReachesTheHandlerAtOnce
// cancels, one after the other.
const cancelRounds = 40

// On PostgreSQL, a cancellation of a running task reaches its handler
// through the Notifier: the consumer reconciles once an hour, so only the
// notification can end the handler's context. The operator is another
// process, taskpg's and taskansi's. The test logs the latency from the
// return of Cancel to the end of the handler's context (p50, p99, max).
func TestACancellationReachesTheHandlerAtOnce(t *testing.T) {
	t.Parallel()
	t.Run("taskpg", func(t *testing.T) {
		t.Parallel()
		_, pool, _, operator, _ := onePostgres(t)
		cancelLatency[taskpg.DB](t, pool, operator, pool)
	})
	t.Run("taskansi", func(t *testing.T) {
		t.Parallel()
		_, pool, db, _, operator := onePostgres(t)
		cancelLatency[taskansi.DB](t, pool, operator, db)
	})
}

// cancelLatency runs a consumer on pool and cancels, by operator on db,
// each of cancelRounds tasks once its handler runs.
func cancelLatency[Tx any](t *testing.T, pool *pgxpool.Pool, operator taskapi.Repository[Tx], db Tx) {
	ctx := t.Context()
	must[bool](t, "Register")(operator.Register(ctx, db))
	must[bool](t, "Initialize")(operator.Initialize(ctx, db, "t"))
	running, ended := make(chan taskapi.Task), make(chan error)
	consumer := must[*taskpg.Repository](t, "taskpg.New")(taskpg.New("consumer"))
	client := must[*taskproc.Client[taskpg.DB]](t, "taskproc.New")(taskproc.New[taskpg.DB](consumer, taskpg.Transact(pool),
		taskproc.WithReconcile(time.Hour), taskproc.WithNotifier(taskpg.NewNotifier(pool))))
	err := client.Handle("t", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		running <- task
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return taskapi.Decision{}, ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := client.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	canceller := operator.(taskapi.Canceller[Tx])
	latencies := make([]time.Duration, 0, cancelRounds)
	for range cancelRounds {
		must[[]taskapi.Task](t, "Push")(operator.Push(ctx, db, "t", taskapi.Append, taskapi.Creation{Identifier: "x"}))
		task := within(t, running, "running task")
		got := must[[]taskapi.Cancellation](t, "Cancel")(canceller.Cancel(ctx, db, "t", "", task.Sequence))
		sent := time.Now()
		if len(got) != 1 || got[0].Owner != "consumer" {
			t.Fatalf("Cancel = %v, want the task run by consumer", got)
		}
		if cause := within(t, ended, "end of the handler's context"); !errors.Is(cause, taskapi.ErrCancelled) {
			t.Fatalf("context.Cause = %v, want ErrCancelled", cause)
		}
		latencies = append(latencies, time.Since(sent))
	}
	slices.Sort(latencies)
	t.Logf("cancel to context end over %d tasks: p50 %v, p99 %v, max %v", len(latencies),
		latencies[len(latencies)/2], latencies[len(latencies)*99/100], latencies[len(latencies)-1])
	infos := must[[]taskapi.Info](t, "Page")(operator.Page(ctx, db, "t", taskapi.Listing{}, taskapi.Inception, 100, taskapi.Forward))
	for _, info := range infos {
		if info.State != taskapi.Cancelled {
			t.Errorf("task %d is %v, want CANCELLED", info.Sequence, info.State)
		}
	}
}
