package faults

import (
	"context"
	"database/sql"
	"log/slog"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's driver "pgx"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// TestTaskansiFailoverLosesNothingCommitted is TestFailoverLosesNothingCommitted
// for taskansi on PostgreSQL: producers and a taskproc Client go through
// database/sql (pgx's stdlib) on the same multi-host URL
// (target_session_attrs=read-write), the Client writing each task's effect
// in its completing transaction (CompleteTx), while the primary is killed
// and its synchronous standby promoted, failoverRounds times. Every push
// whose commit returned is found, every task ends Succeeded with its one
// effect, and the Client carries on by itself.
func TestTaskansiFailoverLosesNothingCommitted(t *testing.T) {
	ctx := context.Background()
	r := testdb.OwnReplicated(t, true)
	pool, checkRepo := openFaultDB(t, r.URL(), failoverTopic)
	db, err := sql.Open("pgx", r.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	producer, err := taskansi.New(taskansi.Postgres, "ansi-producer")
	if err != nil {
		t.Fatal(err)
	}
	prod := &producers{committed: map[string]bool{}, stop: make(chan struct{}), orders: oneOrder, pace: 2 * time.Millisecond}
	prod.startWith(failoverPushers, func(ctx context.Context, creations []taskapi.Creation) error {
		return taskansi.Transact(db, nil)(ctx, func(tx taskansi.DB) error {
			for _, c := range creations {
				if _, err := tx.ExecContext(ctx, "INSERT INTO fault_order (id) VALUES ($1)", c.Identifier); err != nil {
					return err
				}
			}
			_, err := producer.Push(ctx, tx, failoverTopic, taskapi.Append, creations...)
			return err
		})
	})
	client := startAnsiConsumer(t, db)

	t.Logf("work resumed %v after each kill", failOver(t, r, pool, failoverRounds))
	prod.halt()
	total := awaitAllSucceeded(t, pool, checkRepo, failoverTopic)
	stopCtx, cancel := context.WithTimeout(ctx, workerPatience)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil { // the same Client: nobody restarted it
		t.Errorf("stop the Client: %v", err)
	}
	checkProducedOnce(t, ctx, pool, prod, total)
}

// startAnsiConsumer starts a taskproc Client on taskansi that completes the
// tasks of failoverTopic with an effect row each, in the completing
// transaction.
func startAnsiConsumer(t *testing.T, db *sql.DB) *taskproc.Client[taskansi.DB] {
	t.Helper()
	repo, err := taskansi.New(taskansi.Postgres, "ansi-consumer")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	client, err := taskproc.New(repo, taskansi.Transact(db, nil), taskproc.WithExpiry(5*time.Second),
		taskproc.WithPause(20*time.Millisecond), taskproc.WithSize(20), taskproc.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	handler := taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		return settleWithEffects(b, "ansi-consumer", func(ctx context.Context, tx taskansi.DB, sql string, args ...any) error {
			_, err := tx.ExecContext(ctx, sql, args...)
			return err
		})
	})
	if err := client.Handle(failoverTopic, handler); err != nil {
		t.Fatal(err)
	}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return client
}
