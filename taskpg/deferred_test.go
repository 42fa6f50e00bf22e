package taskpg_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// deferredAt is a NotBefore with nanoseconds, away from UTC.
var deferredAt = time.Date(2031, 2, 3, 4, 5, 6, 123456789, time.FixedZone("east", 5*3600+1800))

// pushPaths are the ways a push stores its tasks: one statement for one
// task (alone or in a caller's transaction), one over arrays (a few tasks,
// or an insertion mode that changes older tasks), and COPY.
var pushPaths = []struct {
	name      string
	inTx      bool
	insertion taskapi.Insertion
	n         int
}{
	{"one alone", false, taskapi.Append, 1},
	{"one in a transaction", true, taskapi.Append, 1},
	{"a few", false, taskapi.Append, 3},
	{"replace", false, taskapi.Replace, 3},
	{"bulk", false, taskapi.Append, bulk},
	{"bulk in a transaction", true, taskapi.Append, bulk},
}

// Every push path stores NotBefore in UTC to the microsecond, and NULL for
// a task pushed without one, with the statements that notify and with
// those that do not.
func TestEveryPushPathStoresNotBefore(t *testing.T) {
	t.Parallel()
	for _, path := range pushPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			db, notifying := setup(t, "t")
			quiet := newRepo(t, db, "b", taskpg.WithoutWakeUps())
			creations := make([]taskapi.Creation, path.n)
			for i := range creations {
				creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", i)}
				if i%2 == 0 {
					creations[i].NotBefore = deferredAt.Add(time.Duration(i) * time.Second)
				}
			}
			var target taskpg.DB = db
			if path.inTx {
				tx, err := db.Begin(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(t.Context())
				target = tx
			}
			for _, repo := range []*taskpg.Repository{notifying, quiet} {
				tasks := push(t, repo, target, "t", path.insertion, creations...)
				for i, task := range tasks {
					info, ok, err := repo.Lookup(t.Context(), target, "t", task.Sequence)
					want := creations[i].NotBefore.UTC().Truncate(time.Microsecond)
					if err != nil || !ok || !info.NotBefore.Equal(want) || info.NotBefore.Location() != time.UTC || info.Revivals != 0 {
						t.Fatalf("%s: task %d: %+v, %v, %v; want NotBefore %v in UTC and no revivals", repo.Owner(), i, info, ok, err, want)
					}
				}
			}
		})
	}
}

// The new task of a recreating revival counts one revival more than the
// task it replaces, on every push path, and is due at once.
func TestRevivalsCountOnEveryPushPath(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, bulk} {
		for _, how := range []taskapi.Revivification{taskapi.ReviveAppend, taskapi.ReviveSupersede} {
			t.Run(fmt.Sprint(n, " ", how), func(t *testing.T) {
				t.Parallel()
				db, repo := setup(t, "t")
				creations := make([]taskapi.Creation, n)
				for i := range creations {
					creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", i), NotBefore: time.Now().Add(-time.Hour)}
				}
				push(t, repo, db, "t", taskapi.Append, creations...)
				for round := 1; round <= 2; round++ {
					failed := poll(t, repo, db, "t", n)
					complete(t, repo, db, "t", taskapi.Failure, failed...)
					revivals, err := repo.ReviveTasks(t.Context(), db, "t", how, failed...)
					if err != nil || len(revivals) != n {
						t.Fatalf("round %d: ReviveTasks = %d revivals, %v", round, len(revivals), err)
					}
					for _, r := range revivals {
						old, _, _ := repo.Lookup(t.Context(), db, "t", r.Previous.Sequence)
						current, _, _ := repo.Lookup(t.Context(), db, "t", r.Current.Sequence)
						if old.Revivals != round-1 || old.State != taskapi.Recreated ||
							current.Revivals != round || !current.NotBefore.IsZero() || current.State != taskapi.Ready {
							t.Fatalf("round %d: revived %+v as %+v", round, old, current)
						}
					}
				}
			})
		}
	}
}

// A Defer that fails inside a caller's transaction leaves the transaction
// usable, and changes nothing.
func TestDeferInsideATransaction(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	tasks := push(t, repo, db, "t", taskapi.Append, ids("a", "b")...)
	active := poll(t, repo, db, "t", 1)
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	later := time.Now().Add(time.Hour)
	wantErr(t, repo.Defer(t.Context(), tx, "t", later, tasks[1], active[0]), taskapi.ErrStateMismatch)
	if err := repo.Defer(t.Context(), tx, "t", later, tasks[1]); err != nil {
		t.Fatalf("Defer after a failed one: %v", err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := poll(t, repo, db, "t", 10); len(got) != 0 {
		t.Fatalf("Poll after Defer = %v, want nothing", got)
	}
	info, _, _ := repo.Lookup(t.Context(), db, "t", tasks[1].Sequence)
	if want := later.UTC().Truncate(time.Microsecond); !info.NotBefore.Equal(want) {
		t.Fatalf("NotBefore = %v, want %v", info.NotBefore, want)
	}
}
