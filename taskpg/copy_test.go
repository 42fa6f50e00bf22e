package taskpg_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// bulk is enough creations for Append to store them with COPY.
const bulk = 150

// bulkCreations returns bulk creations: every third suspended, every other
// one with a reference, every fifth without input.
func bulkCreations() []taskapi.Creation {
	creations := make([]taskapi.Creation, bulk)
	for i := range creations {
		c := taskapi.Creation{Identifier: fmt.Sprintf("id-%d", i), Input: fmt.Sprintf("in-%d", i), Suspended: i%3 == 0}
		if i%2 == 0 {
			c.Reference = fmt.Sprintf("ref-%d", i)
		}
		if i%5 == 0 {
			c.Input = ""
		}
		creations[i] = c
	}
	return creations
}

func TestBulkAppendStoresEveryColumn(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	first := push(t, repo, db, "t", taskapi.Append, ids("before")...)
	creations := bulkCreations()
	tasks := push(t, repo, db, "t", taskapi.Append, creations...)
	if len(tasks) != bulk || !slices.IsSorted(sequences(tasks)) || tasks[0].Sequence <= first[0].Sequence {
		t.Fatalf("Push returned %v", sequences(tasks))
	}
	infos, err := repo.Page(t.Context(), db, "t", taskapi.Listing{}, first[0].Sequence, 2*bulk, taskapi.Forward)
	if err != nil || len(infos) != bulk {
		t.Fatalf("Page = %d tasks, %v", len(infos), err)
	}
	for i, info := range infos {
		c := creations[i]
		want := taskapi.Ready
		if c.Suspended {
			want = taskapi.Suspended
		}
		if info.Task != tasks[i] || info.Input != c.Input || info.Reference != c.Reference ||
			info.State != want || info.Descent != taskapi.Ready || info.Created.IsZero() {
			t.Fatalf("task %d = %+v, want %+v from %+v", i, info, tasks[i], c)
		}
	}
	want := 0
	for _, c := range creations {
		if c.Input == "" || c.Reference == "" {
			want++
		}
	}
	var nulls int
	err = db.QueryRow(t.Context(), `SELECT count(*) FROM public.task WHERE sequence > $1 AND (input IS NULL OR reference IS NULL)`,
		first[0].Sequence).Scan(&nulls)
	if err != nil || nulls != want {
		t.Fatalf("%d tasks with a NULL input or reference (%v), want %d", nulls, err, want)
	}
}

// A bulk push to an unknown topic inside a caller's transaction fails with
// ErrUnknownTopic, uses no sequence and leaves the transaction usable.
func TestBulkAppendToAnUnknownTopic(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	before := push(t, repo, tx, "t", taskapi.Append, ids("a")...)
	_, err = repo.Push(t.Context(), tx, "nowhere", taskapi.Append, bulkCreations()...)
	wantErr(t, err, taskapi.ErrUnknownTopic)
	after := push(t, repo, tx, "t", taskapi.Append, bulkCreations()...)
	if after[0].Sequence != before[0].Sequence+1 {
		t.Fatalf("sequence after the failed push = %d, want %d", after[0].Sequence, before[0].Sequence+1)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(states(t, repo, db, "t")); got != 1+bulk {
		t.Fatalf("%d tasks stored, want %d", got, 1+bulk)
	}
}

// A bulk push inside a caller's transaction is rolled back with it.
func TestBulkAppendRollsBackWithTheCaller(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, tx, "t", taskapi.Append, bulkCreations()...)
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := states(t, repo, db, "t"); len(got) != 0 {
		t.Fatalf("%d tasks left after the rollback", len(got))
	}
}

// A bulk push copies into the task table of the repository's schema.
func TestBulkAppendWithSchema(t *testing.T) {
	t.Parallel()
	const schema = `we"ird sch'ema`
	db := migrateSchema(t, testdb.PostgresURL(t), schema)
	repo := newRepo(t, db, "a", taskpg.WithSchema(schema))
	if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
		t.Fatal(err)
	}
	push(t, repo, db, "t", taskapi.Append, bulkCreations()...)
	if got := len(states(t, repo, db, "t")); got != bulk {
		t.Fatalf("%d tasks stored, want %d", got, bulk)
	}
}
