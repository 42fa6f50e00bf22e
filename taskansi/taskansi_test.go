package taskansi_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

func TestNewRejectsBadArguments(t *testing.T) {
	t.Parallel()
	for name, call := range map[string]func() error{
		"undefined dialect": func() error { _, err := taskansi.New(taskansi.Dialect(9), "o"); return err },
		"zero dialect":      func() error { _, err := taskansi.New(0, "o"); return err },
		"empty owner":       func() error { _, err := taskansi.New(taskansi.SQLite, ""); return err },
		"NUL in schema": func() error {
			_, err := taskansi.New(taskansi.MySQL, "o", taskansi.WithSchema("a\x00b"))
			return err
		},
		"over-long schema": func() error {
			_, err := taskansi.New(taskansi.Postgres, "o", taskansi.WithSchema(string(make([]byte, 64))))
			return err
		},
	} {
		if err := call(); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("New with %s = %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestDialectNames(t *testing.T) {
	t.Parallel()
	for d, want := range map[taskansi.Dialect]string{
		taskansi.Postgres: "postgres", taskansi.SQLite: "sqlite", taskansi.MySQL: "mysql", 7: "Dialect(7)",
	} {
		if got := d.String(); got != want {
			t.Errorf("Dialect(%d).String() = %q, want %q", int(d), got, want)
		}
	}
}

// setup returns a fresh SQLite database and a registered repository on it
// with topic "t".
func setup(t *testing.T, opts ...taskansi.Option) (*sql.DB, *taskansi.Repository) {
	t.Helper()
	db := testdb.SQLite(t)
	repo, err := taskansi.New(taskansi.SQLite, "owner", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
		t.Fatal(err)
	}
	return db, repo
}

// A *sql.Conn is a handle too: calls of several statements begin a
// transaction on it, and a failed call leaves it usable.
func TestConnHandle(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := setup(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tasks, err := repo.Push(ctx, conn, "t", taskapi.Append, taskapi.Creation{Identifier: "a"})
	if err != nil {
		t.Fatal(err)
	}
	err = repo.Complete(ctx, conn, "t", taskapi.Completion{Task: tasks[0], Decision: taskapi.Decision{Result: taskapi.Success}})
	if !errors.Is(err, taskapi.ErrNotActive) {
		t.Fatalf("Complete of a Ready task = %v, want ErrNotActive", err)
	}
	polled, err := repo.Poll(ctx, conn, "t", 5)
	if err != nil || len(polled) != 1 || polled[0] != tasks[0] {
		t.Fatalf("Poll on the connection = %v, %v; want %v", polled, err, tasks)
	}
}

// Inside a caller's transaction a failed call rolls back to its savepoint
// only, and the caller's rollback discards the calls that succeeded.
func TestSavepointInCallerTransaction(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := setup(t)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(ctx, tx, "t", taskapi.Append, taskapi.Creation{Identifier: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(ctx, tx, "nowhere", taskapi.Append, taskapi.Creation{Identifier: "b"}); !errors.Is(err, taskapi.ErrUnknownTopic) {
		t.Fatalf("Push to an unknown topic = %v, want ErrUnknownTopic", err)
	}
	infos, err := repo.Page(ctx, tx, "t", taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
	if err != nil || len(infos) != 1 {
		t.Fatalf("Page in the transaction = %d tasks, %v; want 1", len(infos), err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	infos, err = repo.Page(ctx, db, "t", taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
	if err != nil || len(infos) != 0 {
		t.Fatalf("Page after rollback = %d tasks, %v; want none", len(infos), err)
	}
}

// The schema triggers refuse a task of an unknown topic, whoever inserts it,
// and Destroy takes the topic's tasks along.
func TestSQLiteSchemaGuardsTopics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := setup(t)
	_, err := db.ExecContext(ctx, `INSERT INTO task (topic, identifier) VALUES ('nowhere', 'x')`)
	if err == nil {
		t.Fatal("a task of an unknown topic was inserted")
	}
	if _, err := repo.Push(ctx, db, "t", taskapi.Append, taskapi.Creation{Identifier: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Destroy(ctx, db, "t"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM task`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d tasks, %v after Destroy; want none", n, err)
	}
}

// WithSchema qualifies every table: here an attached SQLite database.
func TestWithSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := testdb.SQLiteFile(t)
	db := testdb.OpenSQLite(t, t.TempDir()+"/empty.db", testdb.SQLiteOptions)
	db.SetMaxOpenConns(1) // ATTACH belongs to one connection
	if _, err := db.ExecContext(ctx, `ATTACH DATABASE ? AS "my tasks"`, path); err != nil {
		t.Fatal(err)
	}
	repo, err := taskansi.New(taskansi.SQLite, "owner", taskansi.WithSchema("my tasks"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, db, "t"); err != nil {
		t.Fatal(err)
	}
	tasks, err := repo.Push(ctx, db, "t", taskapi.Append, taskapi.Creation{Identifier: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if polled, err := repo.Poll(ctx, db, "t", 1); err != nil || len(polled) != 1 || polled[0] != tasks[0] {
		t.Fatalf("Poll = %v, %v; want %v", polled, err, tasks)
	}
	if err := repo.Refresh(ctx, db); err != nil {
		t.Fatal(err)
	}
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	db, repo := setup(t)
	if err := repo.Refresh(context.Background(), db); err != nil {
		t.Fatal(err)
	}
}

// A push larger than one statement takes is split, and its sequences still
// follow creation order.
func TestLargePushIsSplit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, repo := setup(t)
	creations := make([]taskapi.Creation, 2500)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprint("id-", i%700), Input: strings.Repeat("x", 4000)}
	}
	tasks, err := repo.Push(ctx, db, "t", taskapi.Replace, creations...)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != len(creations) {
		t.Fatalf("Push returned %d tasks, want %d", len(tasks), len(creations))
	}
	for i, task := range tasks {
		if task.Identifier != creations[i].Identifier || i > 0 && task.Sequence <= tasks[i-1].Sequence {
			t.Fatalf("task %d = %v after %v: not in creation order", i, task, tasks[max(i-1, 0)])
		}
	}
	counts, err := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if got := counts["t"]; got[taskapi.Ready].Count != 700 || got[taskapi.Redundant].Count != 1800 {
		t.Errorf("Count = %v, want 700 READY and 1800 REDUNDANT", got)
	}
}
