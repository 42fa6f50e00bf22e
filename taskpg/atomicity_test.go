package taskpg_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// Calls that fail inside a caller's transaction leave it usable and change
// nothing.
func TestFailuresKeepTheTransactionUsable(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	done := push(t, repo, db, "t", taskapi.Append, ids("done")...)
	complete(t, repo, db, "t", taskapi.Success, poll(t, repo, db, "t", 1)...)
	tx, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	ready := push(t, repo, tx, "t", taskapi.Append, ids("ready")...)
	stranger, _ := taskpg.New("stranger")
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		call   func() error
		target error
	}{
		{"Push to an unknown topic", func() error {
			return second(repo.Push(ctx, tx, "nowhere", taskapi.Append, ids("x")...))
		}, taskapi.ErrUnknownTopic},
		{"Complete of a Ready task", func() error {
			return repo.Complete(ctx, tx, "t", taskapi.Completion{Task: ready[0]})
		}, taskapi.ErrNotActive},
		{"ReviveTasks (append) of a Ready task", func() error {
			return second(repo.ReviveTasks(ctx, tx, "t", taskapi.ReviveAppend, done[0], ready[0]))
		}, taskapi.ErrStateMismatch},
		{"ReviveTasks (reset) of a missing task", func() error {
			return second(repo.ReviveTasks(ctx, tx, "t", taskapi.ReviveReset, done[0], taskapi.Task{Sequence: 1 << 40}))
		}, taskapi.ErrStateMismatch},
		{"Reassign of a Ready task", func() error {
			return repo.Reassign(ctx, tx, "t", taskapi.Assignment{Task: done[0]}, taskapi.Assignment{Task: ready[0]})
		}, taskapi.ErrStateMismatch},
		{"Poll by an unknown owner", func() error {
			return second(stranger.Poll(ctx, tx, "t", 1))
		}, taskapi.ErrUnknownOwner},
		{"Heartbeat of an unknown owner", func() error {
			return stranger.Heartbeat(ctx, tx)
		}, taskapi.ErrUnknownOwner},
	} {
		if err := c.call(); !errors.Is(err, c.target) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.target)
		}
		if _, err := tx.Exec(t.Context(), "SELECT 1"); err != nil {
			t.Fatalf("after %s the transaction is not usable: %v", c.name, err)
		}
	}
	var pgErr *pgconn.PgError
	if err := purgeAllLocked(t, repo, db, tx); !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Errorf("PurgeAll of a locked partition: error %v, want a lock timeout", err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := []taskapi.State{taskapi.Succeeded, taskapi.Ready}
	if s := states(t, repo, db, "t"); len(s) != 2 || s[0] != want[0] || s[1] != want[1] {
		t.Fatalf("states after the failures: %v, want %v", s, want)
	}
}

func second[T any](_ T, err error) error { return err }

// purgeAllLocked runs PurgeAll in tx while another transaction holds a lock
// on the topic's partition, so that its TRUNCATE fails with a lock timeout
// after its first statement.
func purgeAllLocked(t *testing.T, repo *taskpg.Repository, db taskpg.DB, tx pgx.Tx) error {
	t.Helper()
	other, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback(t.Context())
	if _, err := other.Exec(t.Context(), "SELECT FROM public.task WHERE topic = 't'"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "SET LOCAL lock_timeout = '100ms'"); err != nil {
		t.Fatal(err)
	}
	err = repo.PurgeAll(t.Context(), tx, "t")
	if _, err := tx.Exec(t.Context(), "SET LOCAL lock_timeout = 0"); err != nil {
		t.Fatalf("after PurgeAll the transaction is not usable: %v", err)
	}
	return err
}

// A single push to an unknown topic on a connection reports the topic both
// outside a transaction and inside one the caller opened with a plain BEGIN,
// which it leaves usable.
func TestSinglePushToAnUnknownTopicOnAConnection(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	conn, err := db.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	c := conn.Conn()
	if _, err := repo.Push(t.Context(), c, "nowhere", taskapi.Append, ids("x")...); !errors.Is(err, taskapi.ErrUnknownTopic) {
		t.Errorf("Push outside a transaction: error %v, want %v", err, taskapi.ErrUnknownTopic)
	}
	if _, err := c.Exec(t.Context(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(t.Context(), c, "nowhere", taskapi.Append, ids("x")...); !errors.Is(err, taskapi.ErrUnknownTopic) {
		t.Errorf("Push inside BEGIN: error %v, want %v", err, taskapi.ErrUnknownTopic)
	}
	kept := push(t, repo, c, "t", taskapi.Append, ids("kept")...)
	if _, err := c.Exec(t.Context(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if s := states(t, repo, db, "t"); len(s) != 1 || s[0] != taskapi.Ready || len(kept) != 1 {
		t.Fatalf("states after the failures: %v, want [READY]", s)
	}
}
