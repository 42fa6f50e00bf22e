package taskansi_test

import (
	"database/sql"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/racedetector"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// More identifiers than a page of the loose scan (250) and a statement of
// branches (100) holds: a poll under a limit per identifier reads them all
// and takes the earliest tasks of each in poll order, as many as its size,
// and an Active limit bounds the lot. On every dialect.
func TestLimitsOverManyIdentifiers(t *testing.T) {
	t.Parallel()
	opens := servers()
	if !racedetector.Enabled {
		// Under the detector, SQLite's engine took 15 s of a busy machine
		// for these polls; .ci/run's heavy step runs them without it.
		opens[taskansi.SQLite] = func(t *testing.T) *sql.DB { return testdb.SQLite(t) }
	}
	for dialect, open := range opens {
		t.Run(dialect.String(), func(t *testing.T) {
			t.Parallel()
			db := open(t)
			repo, err := taskansi.New(dialect, "owner")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Register(t.Context(), db); err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
				t.Fatal(err)
			}
			pollManyIdentifiers(t, db, repo)
		})
	}
}

// pollManyIdentifiers is TestLimitsOverManyIdentifiers on db.
func pollManyIdentifiers(t *testing.T, db *sql.DB, repo *taskansi.Repository) {
	ctx := t.Context()
	const keys = 620
	creations := make([]taskapi.Creation, 0, 2*keys)
	for round := range 2 {
		for k := range keys {
			creations = append(creations, taskapi.Creation{Identifier: fmt.Sprintf("k%04d", k), Input: fmt.Sprint(round)})
		}
	}
	pushed, err := repo.Push(ctx, db, "t", taskapi.Append, creations...)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.SetLimits(ctx, db, "t", taskapi.Limits{PerIdentifier: 1, Active: keys - 20}); err != nil {
		t.Fatal(err)
	}
	got, err := repo.Poll(ctx, db, "t", 2*keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != keys-20 {
		t.Fatalf("polled %d tasks, want %d", len(got), keys-20)
	}
	for i, task := range got {
		if task.Sequence != pushed[i].Sequence {
			t.Fatalf("task %d of the poll is %d, want %d (the first round in order)", i, task.Sequence, pushed[i].Sequence)
		}
	}
	if err := repo.SetLimits(ctx, db, "t", taskapi.Limits{PerIdentifier: 1}); err != nil {
		t.Fatal(err)
	}
	got, err = repo.Poll(ctx, db, "t", 2*keys, taskapi.LIFO)
	if err != nil {
		t.Fatal(err)
	}
	// The 20 identifiers left with room give their latest tasks, the
	// earliest in LIFO order.
	if len(got) != 20 {
		t.Fatalf("LIFO poll took %d tasks, want 20", len(got))
	}
	for i, task := range got {
		if want := pushed[2*keys-1-i]; task.Sequence != want.Sequence {
			t.Fatalf("task %d of the LIFO poll is %d, want %d", i, task.Sequence, want.Sequence)
		}
	}
}
