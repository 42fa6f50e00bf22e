package integration_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// TestActivationNotifiesAtCommit proves, for taskpg and for taskansi on
// PostgreSQL, that SetActivation notifies taskpg.ActivationChannel with the
// topic when its transaction commits, and never when it rolls back.
// PostgreSQL delivers notifications in commit order, so a change committed
// by another session while the transaction is open must arrive first.
func TestActivationNotifiesAtCommit(t *testing.T) {
	t.Parallel()
	url := testdb.PostgresURL(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	listener, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close(context.Background()) })
	channel := taskpg.ActivationChannel("public")
	if _, err := listener.Exec(t.Context(), "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	pg, err := taskpg.New("pg")
	if err != nil {
		t.Fatal(err)
	}
	ansi, err := taskansi.New(taskansi.Postgres, "ansi")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("taskpg", func(t *testing.T) {
		notifiesAtCommit(t, listener, channel, pgBackend().Begin, taskpg.DB(pool), pg)
	})
	t.Run("taskansi", func(t *testing.T) {
		notifiesAtCommit(t, listener, channel, ansiBackend(taskansi.Postgres, nil).Begin, taskansi.DB(db), ansi)
	})
}

// notifiesAtCommit runs SetActivation in a transaction rolled back, then in
// one committed after another session's change, and expects listener to
// hear the other session's topic, then the committed one's.
func notifiesAtCommit[Tx any](t *testing.T, listener *pgx.Conn, channel string,
	begin func(context.Context, Tx) (Tx, func(bool) error, error), db Tx, repo taskapi.Repository[Tx]) {
	ctx := t.Context()
	a, ok := repo.(taskapi.Activator[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Activator", repo)
	}
	rolledBack, committed, other := t.Name()+"/rolled-back", t.Name()+"/committed", t.Name()+"/other"
	for _, topic := range []string{rolledBack, committed, other} {
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
	}
	inTransaction := func(topic string, commit bool, meanwhile func()) {
		t.Helper()
		tx, end, err := begin(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.SetActivation(ctx, tx, topic, taskapi.Paused); err != nil {
			t.Fatalf("SetActivation(%q): %v", topic, err)
		}
		meanwhile()
		if err := end(commit); err != nil {
			t.Fatal(err)
		}
	}
	inTransaction(rolledBack, false, func() {})
	inTransaction(committed, true, func() {
		if err := a.SetActivation(ctx, db, other, taskapi.Draining); err != nil {
			t.Fatalf("SetActivation(%q) by another session: %v", other, err)
		}
	})
	for _, want := range []string{other, committed} {
		wait, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := listener.WaitForNotification(wait)
		cancel()
		if err != nil {
			t.Fatalf("waiting for the notification of %q: %v", want, err)
		}
		if n.Channel != channel || n.Payload != want {
			t.Fatalf("notification %q on %q, want %q on %q", n.Payload, n.Channel, want, channel)
		}
	}
}
