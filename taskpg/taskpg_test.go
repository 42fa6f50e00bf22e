package taskpg_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// newRepo returns a registered repository for owner on db.
func newRepo(t *testing.T, db taskpg.DB, owner string, opts ...taskpg.Option) *taskpg.Repository {
	t.Helper()
	repo, err := taskpg.New(owner, opts...)
	if err != nil {
		t.Fatalf("New(%q): %v", owner, err)
	}
	if _, err := repo.Register(t.Context(), db); err != nil {
		t.Fatalf("Register(%q): %v", owner, err)
	}
	return repo
}

// setup opens a fresh database and returns it with a registered repository
// of owner "a" and the initialized topics.
func setup(t *testing.T, topics ...string) (*pgxpool.Pool, *taskpg.Repository) {
	t.Helper()
	db := testdb.Postgres(t)
	repo := newRepo(t, db, "a")
	for _, topic := range topics {
		if _, err := repo.Initialize(t.Context(), db, topic); err != nil {
			t.Fatalf("Initialize(%q): %v", topic, err)
		}
	}
	return db, repo
}

// ids returns one creation per identifier, with the identifier as input.
func ids(identifiers ...string) []taskapi.Creation {
	creations := make([]taskapi.Creation, len(identifiers))
	for i, id := range identifiers {
		creations[i] = taskapi.Creation{Identifier: id, Input: "in-" + id}
	}
	return creations
}

func push(t *testing.T, repo *taskpg.Repository, db taskpg.DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) []taskapi.Task {
	t.Helper()
	tasks, err := repo.Push(t.Context(), db, topic, insertion, creations...)
	if err != nil {
		t.Fatalf("Push(%q, %v): %v", topic, insertion, err)
	}
	return tasks
}

func poll(t *testing.T, repo *taskpg.Repository, db taskpg.DB, topic string, size int, opts ...taskapi.PollOption) []taskapi.Task {
	t.Helper()
	tasks, err := repo.Poll(t.Context(), db, topic, size, opts...)
	if err != nil {
		t.Fatalf("Poll(%q, %d, %v): %v", topic, size, opts, err)
	}
	return tasks
}

func complete(t *testing.T, repo *taskpg.Repository, db taskpg.DB, topic string, result taskapi.Result, tasks ...taskapi.Task) {
	t.Helper()
	completions := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: result, Output: "out"}}
	}
	if err := repo.Complete(t.Context(), db, topic, completions...); err != nil {
		t.Fatalf("Complete(%q, %v): %v", topic, result, err)
	}
}

// states returns the state of every task of topic, in sequence order.
func states(t *testing.T, repo *taskpg.Repository, db taskpg.DB, topic string) []taskapi.State {
	t.Helper()
	infos, err := repo.Page(t.Context(), db, topic, taskapi.Listing{}, taskapi.Inception, 1000, taskapi.Forward)
	if err != nil {
		t.Fatalf("Page(%q): %v", topic, err)
	}
	var got []taskapi.State
	for _, info := range infos {
		got = append(got, info.State)
	}
	return got
}

func sequences(tasks []taskapi.Task) []int64 {
	seqs := make([]int64, len(tasks))
	for i, task := range tasks {
		seqs[i] = task.Sequence
	}
	return seqs
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}
