package integration_test

import (
	"database/sql"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// TestTaskansiCallsNeverEndTheCallersTransactionOnAConnection opens a
// transaction with a plain BEGIN on a *sql.Conn, which database/sql does
// not know of, runs in it the calls that work in a unit of their own, and
// rolls back: nothing of them, nor of the caller's own row, may remain. A
// BeginTx of the repository's own would have committed the caller's work
// (MySQL commits an open transaction at BEGIN; PostgreSQL only warns and
// then commits at the repository's COMMIT). The same calls on a connection
// outside a transaction commit as on a *sql.DB.
func TestTaskansiCallsNeverEndTheCallersTransactionOnAConnection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dialect taskansi.Dialect
		open    func(t *testing.T) *sql.DB
	}{
		{taskansi.SQLite, func(t *testing.T) *sql.DB { return testdb.SQLite(t) }},
		{taskansi.Postgres, openPostgres},
		{taskansi.MySQL, func(t *testing.T) *sql.DB { return testdb.MySQL(t) }},
	} {
		t.Run(c.dialect.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := c.open(t)
			repo := must[*taskansi.Repository](t, "New")(taskansi.New(c.dialect, "a"))
			other := must[*taskansi.Repository](t, "New")(taskansi.New(c.dialect, "b"))
			for _, r := range []*taskansi.Repository{repo, other} {
				must[bool](t, "Register")(r.Register(ctx, db))
			}
			for _, topic := range []string{"t", "other"} {
				must[bool](t, "Initialize")(repo.Initialize(ctx, db, topic))
			}
			must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "t", taskapi.Append, creations(3, 3)...))
			done := must[[]taskapi.Task](t, "Poll")(repo.Poll(ctx, db, "t", 2))
			completions := make([]taskapi.Completion, len(done))
			for i, task := range done {
				completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Failure}}
			}
			if err := repo.Complete(ctx, db, "t", completions...); err != nil {
				t.Fatal(err)
			}
			must[[]taskapi.Task](t, "Push")(repo.Push(ctx, db, "other", taskapi.Append, creations(2, 2)...))
			if _, err := db.ExecContext(ctx, "CREATE TABLE mine (x integer)"); err != nil {
				t.Fatal(err)
			}
			tasks := func(topic string) int {
				t.Helper()
				counts := must[map[string]map[taskapi.State]taskapi.Summary](t, "Count")(
					repo.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded))
				n := 0
				for _, s := range counts[topic] {
					n += int(s.Count)
				}
				return n
			}
			before := tasks("t")

			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			run := func(statement string) {
				t.Helper()
				if _, err := conn.ExecContext(ctx, statement); err != nil {
					t.Fatalf("%s: %v", statement, err)
				}
			}
			run("BEGIN")
			run("INSERT INTO mine (x) VALUES (1)")
			step := func(what string, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s on a connection in a transaction: %v", what, err)
				}
			}
			_, err = repo.Push(ctx, conn, "t", taskapi.Append, creations(150, 150)...)
			step("Push of 150", err)
			_, err = repo.ReviveTasks(ctx, conn, "t", taskapi.ReviveAppend, done...)
			step("ReviveTasks", err)
			step("PurgeAll", repo.PurgeAll(ctx, conn, "other"))
			_, err = repo.Poll(ctx, conn, "t", 5, taskapi.SingularByIdentifier)
			step("conditional Poll", err)
			_, err = repo.Push(ctx, conn, "t", taskapi.Replace, taskapi.Creation{Identifier: "id-0"})
			step("Push with Replace", err)
			_, err = other.Expire(ctx, conn, 0)
			step("Expire", err)
			_, err = repo.Count(ctx, conn, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
			step("Count", err)
			run("ROLLBACK")

			var mine int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM mine").Scan(&mine); err != nil || mine != 0 {
				t.Errorf("the caller's table holds %d rows after its ROLLBACK (%v): a call committed the caller's transaction", mine, err)
			}
			if n := tasks("t"); n != before {
				t.Errorf("topic t has %d tasks after the ROLLBACK, want the %d before", n, before)
			}
			if n := tasks("other"); n != 2 {
				t.Errorf("topic other has %d tasks after the rolled back PurgeAll, want 2", n)
			}

			// Outside a transaction, each call is one of its own.
			_, err = repo.Push(ctx, conn, "t", taskapi.Append, creations(150, 150)...)
			step("Push of 150 outside a transaction", err)
			step("PurgeAll outside a transaction", repo.PurgeAll(ctx, conn, "other"))
			if n, want := tasks("t"), before+150; n != want {
				t.Errorf("topic t has %d tasks after a push on a connection outside a transaction, want %d", n, want)
			}
			if n := tasks("other"); n != 0 {
				t.Errorf("topic other has %d tasks after PurgeAll on a connection outside a transaction, want none", n)
			}
			if _, err := conn.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Errorf("the connection is not usable after the calls: %v", err)
			}
		})
	}
}
