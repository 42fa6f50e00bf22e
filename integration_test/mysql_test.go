package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// wait is how long a test waits for a call that must not be blocked: far
// longer than the call takes, far shorter than a lock wait (50 s on InnoDB).
const wait = 20 * time.Second

// TestTaskansiMySQLOpenTransactionsBlockNoPush holds polls, a conditional
// poll and a Replace push in transactions left open at InnoDB's default
// isolation, REPEATABLE READ, under which a range read locks the gaps it
// passes over, and checks that pushes of other transactions go through:
// before, a poll of many tasks locked the end of the topic's primary key, a
// conditional poll held the topic's row that every insert's foreign key
// reads, and pushes waited for them.
func TestTaskansiMySQLOpenTransactionsBlockNoPush(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), testdb.MySQL(t)
	repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.MySQL, "consumer"))
	must[bool](t, "Register")(repo.Register(ctx, db))
	must[bool](t, "Initialize")(repo.Initialize(ctx, db, "t"))
	must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "t", taskapi.Append, creations(2000, 50)...))
	must[struct{}](t, "Refresh")(struct{}{}, repo.Refresh(ctx, db))
	for _, hold := range []struct {
		name string
		call func(tx *sql.Tx) error
	}{
		{"a poll of 500", func(tx *sql.Tx) error { _, err := repo.Poll(ctx, tx, "t", 500); return err }},
		{"a poll of 1500 in LIFO order", func(tx *sql.Tx) error { _, err := repo.Poll(ctx, tx, "t", 1500, taskapi.LIFO); return err }},
		{"a conditional poll", func(tx *sql.Tx) error {
			_, err := repo.Poll(ctx, tx, "t", 10, taskapi.SingularByIdentifier)
			return err
		}},
		{"a Complete of 500", func(tx *sql.Tx) error {
			polled, err := repo.Poll(ctx, db, "t", 500)
			completions := make([]taskapi.Completion, len(polled))
			for i, task := range polled {
				completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Success}}
			}
			if err == nil {
				err = repo.Complete(ctx, tx, "t", completions...)
			}
			return err
		}},
		{"a Replace push", func(tx *sql.Tx) error {
			_, err := repo.Push(ctx, tx, "t", taskapi.Replace, taskapi.Creation{Identifier: "id-7"})
			return err
		}},
	} {
		t.Run(hold.name, func(t *testing.T) {
			tx := must[*sql.Tx](t, "Begin")(db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead}))
			defer tx.Rollback()
			if err := hold.call(tx); err != nil {
				t.Fatalf("%s: %v", hold.name, err)
			}
			for i, insertion := range []taskapi.Insertion{taskapi.Append, taskapi.Replace, taskapi.Supersede} {
				testdb.Returns(t, fmt.Sprintf("a %v push while %s is open", insertion, hold.name), wait, func(ctx context.Context) error {
					_, err := repo.Push(ctx, db, "t", insertion, taskapi.Creation{Identifier: fmt.Sprint("new-", i)})
					return err
				})
			}
		})
	}
}

// TestTaskansiMySQLPushThenConditionalPollDoNotDeadlock runs two
// transactions that each push and then poll the topic with a condition:
// before, each held the topic's row in share mode (the push) and waited to
// lock it (the poll), a deadlock.
func TestTaskansiMySQLPushThenConditionalPollDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx, db := t.Context(), testdb.MySQL(t)
	repo := must[*taskansi.Repository](t, "New")(taskansi.New(taskansi.MySQL, "consumer"))
	must[bool](t, "Register")(repo.Register(ctx, db))
	must[bool](t, "Initialize")(repo.Initialize(ctx, db, "t"))
	first := must[*sql.Tx](t, "Begin")(db.BeginTx(ctx, nil))
	defer first.Rollback()
	second := must[*sql.Tx](t, "Begin")(db.BeginTx(ctx, nil))
	defer second.Rollback()
	must[[]taskapi.Task](t, "Push in the first")(repo.Push(ctx, first, "t", taskapi.Append, taskapi.Creation{Identifier: "a"}))
	must[[]taskapi.Task](t, "Push in the second")(repo.Push(ctx, second, "t", taskapi.Append, taskapi.Creation{Identifier: "b"}))
	must[[]taskapi.Task](t, "conditional Poll in the first")(repo.Poll(ctx, first, "t", 10, taskapi.SingularByIdentifier))
	// The second's conditional poll waits for the first's turn to end.
	polled := make(chan error, 1)
	go func() {
		_, err := repo.Poll(ctx, second, "t", 10, taskapi.SingularByIdentifier)
		polled <- err
	}()
	if err := first.Commit(); err != nil {
		t.Fatalf("Commit of the first: %v", err)
	}
	select {
	case err := <-polled:
		if err != nil {
			t.Errorf("conditional Poll in the second: %v", err)
		}
	case <-time.After(wait):
		t.Fatalf("the second's conditional poll did not return within %v of the first's commit", wait)
	}
	if err := second.Commit(); err != nil {
		t.Errorf("Commit of the second: %v", err)
	}
}
