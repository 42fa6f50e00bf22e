package integration_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// TestTaskansiPostgresCancelNotifiesTheOwners proves that taskansi's Cancel
// on PostgreSQL notifies taskpg.ActivationChannel with the topic when it
// cancels Active tasks, so that their owners' runtimes reconcile at once,
// and not when it cancels Ready tasks only, which no owner runs.
// PostgreSQL delivers notifications in commit order: a notification of the
// first cancellation would arrive before that of the second.
func TestTaskansiPostgresCancelNotifiesTheOwners(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := testdb.PostgresURL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close(context.Background()) })
	channel := taskpg.ActivationChannel("public")
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	repo, err := taskansi.New(taskansi.Postgres, "cancel-notify")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Register(ctx, db); err != nil {
		t.Fatal(err)
	}
	ready, active := t.Name()+"/ready", t.Name()+"/active"
	cancelFirst := func(topic string, poll bool) {
		t.Helper()
		if _, err := repo.Initialize(ctx, db, topic); err != nil {
			t.Fatal(err)
		}
		tasks, err := repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if poll {
			if tasks, err = repo.Poll(ctx, db, topic, 1); err != nil || len(tasks) != 1 {
				t.Fatalf("Poll: %v, %v", tasks, err)
			}
		}
		got, err := repo.Cancel(ctx, db, topic, "", tasks[0].Sequence)
		if err != nil || len(got) != 1 {
			t.Fatalf("Cancel: %v, %v", got, err)
		}
	}
	cancelFirst(ready, false)
	cancelFirst(active, true)
	for {
		wait, cancel := context.WithTimeout(ctx, 10*time.Second)
		n, err := listener.WaitForNotification(wait)
		cancel()
		if err != nil {
			t.Fatalf("waiting for the notification of %q: %v", active, err)
		}
		switch n.Payload { // other tests notify the channel too
		case ready:
			t.Fatalf("the cancellation of a Ready task notified %q", channel)
		case active:
			return
		}
	}
}
