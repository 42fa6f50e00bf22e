package taskpg

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
)

// TestCompletionIgnoresTheOwnersOtherTasks: a completion reaches the tasks
// it names by their sequences, however many other tasks their owner holds
// Active. A consumer that buffers batches holds thousands while it
// completes a few hundred; a plan through the owner's index (task_active)
// read every one of them, and their dead entries too, and compared each
// with every named sequence: a completion cost what its owner held.
func TestCompletionIgnoresTheOwnersOtherTasks(t *testing.T) {
	if racedetector.Enabled {
		t.Skip("the plans are checked in a build without the race detector (.ci/run heavy)")
	}
	t.Parallel()
	for _, mode := range planModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Postgres(t)
			repo := planSetup(t, db)
			e := explainingFor(t, db, repo, mode.generic)
			load(t, db, repo)
			var held []taskapi.Task
			for {
				tasks, err := repo.Poll(t.Context(), db, "plan", 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(tasks) == 0 {
					break
				}
				held = append(held, tasks...)
			}
			if len(held) != planBacklog {
				t.Fatalf("polled %d tasks, want the backlog of %d", len(held), planBacklog)
			}
			// Every other task, so that the completion names as many runs
			// as tasks, from the middle of what the owner holds.
			completions := make([]taskapi.Completion, planBatch)
			for i := range completions {
				task := held[planBacklog/2+2*i]
				completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Result(i % 4), Output: "out"}}
			}
			los, his, states, outputs, named := completeArgs(completions)
			args := []any{"plan", los, his, states, outputs, repo.owner, named}
			checkScanned(t, e, "complete", repo.q.completeOwn, args)
			if e.conn == nil { // in a caller's transaction, planned for its arguments
				checkScanned(t, e, "complete in a caller's transaction", repo.q.complete, args)
			}
		})
	}
}

// checkScanned runs the completion query of planBatch tasks, as e has it
// planned, under EXPLAIN ANALYZE in a transaction that is rolled back, and
// fails unless it completed them reading at most rowsPerTask rows of the
// partition per task.
func checkScanned(t *testing.T, e *explaining, what, query string, args []any) {
	t.Helper()
	tx, rollback := begin(t, e.db())
	defer rollback()
	var plan []byte
	explain, args := e.explain(t, query, args)
	if err := tx.QueryRow(t.Context(), explain, args...).Scan(&plan); err != nil {
		t.Fatalf("%s: explain: %v", what, err)
	}
	var completed int
	if err := tx.QueryRow(t.Context(), "SELECT count(*) FROM public.task WHERE state > 2").Scan(&completed); err != nil {
		t.Fatal(err)
	}
	if completed != planBatch {
		t.Fatalf("%s completed %d tasks, want %d", what, completed, planBatch)
	}
	scanned, err := testdb.Scanned(plan, partitionName("plan"))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %d rows scanned", what, scanned) // for the record, in -v
	if scanned > rowsPerTask*planBatch {
		t.Errorf("%s read %d rows of the partition for %d tasks, want at most %d per task", what, scanned, planBatch, rowsPerTask)
	}
}

// rowsPerTask is what a completion may read per task: the task, and the
// row that the update writes.
const rowsPerTask = 3
