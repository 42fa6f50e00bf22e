package migrations_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// PostgreSQL's 00013 replaces the allowances of a topic with a capacity by
// its two sequences, and its Down brings the allowances back: a capacity
// set before either holds after it.
func TestTicketsReplaceAllowancesUpAndDown(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := testdb.PostgresURL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := migrations.NewProvider(db, migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) error {
		t.Helper()
		_, err := db.ExecContext(ctx, query, args...)
		return err
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	count := func(query string) int {
		t.Helper()
		var n int
		must(db.QueryRowContext(ctx, query).Scan(&n))
		return n
	}
	sequences := func() int {
		t.Helper()
		return count(`SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname ~ '^task_(ticket|bound)_'`)
	}
	// pushByHand pushes one Ready task as 00010's clients did, admitted by
	// task_admit in the same transaction.
	pushByHand := func() error {
		tx, err := db.BeginTx(ctx, nil)
		must(err)
		defer func() { _ = tx.Rollback() }()
		for _, statement := range []string{
			`SELECT set_config('taskrepo.admitting', 'on', true)`,
			`INSERT INTO task (topic, identifier, state) VALUES ('capped', 'by hand', 1)`,
			`SELECT task_admit('capped', 1)`,
		} {
			if _, err := tx.ExecContext(ctx, statement); err != nil {
				return err
			}
		}
		return tx.Commit()
	}
	repo, err := taskpg.New("migrations")
	must(err)
	push := func() error {
		_, err := repo.Push(ctx, pool, "capped", taskapi.Append, taskapi.Creation{Identifier: "by taskpg"})
		return err
	}
	wantRefused := func(err error, count int64) {
		t.Helper()
		var capacityErr *taskapi.CapacityError
		if !errors.As(err, &capacityErr) || capacityErr.Capacity != 3 || capacityErr.Count != count {
			t.Fatalf("push = %v, want a refusal at capacity 3 with %d Ready tasks", err, count)
		}
	}

	_, err = p.DownTo(ctx, 12)
	must(err)
	must(exec(`INSERT INTO task_topic (topic) VALUES ('capped')`))
	must(exec(`UPDATE task_topic SET capacity = 3 WHERE topic = 'capped'`))
	must(pushByHand())
	if n := count(`SELECT count(*) FROM task_allowance WHERE topic = 'capped'`); n != 16 {
		t.Fatalf("00010 made %d allowances, want 16", n)
	}

	_, err = p.Up(ctx) // taskpg pushes with the statements of the latest version
	must(err)
	if n := sequences(); n != 2 {
		t.Fatalf("00013 made %d sequences for the capped topic, want 2", n)
	}
	must(push())
	must(push())
	wantRefused(push(), 4)

	_, err = p.DownTo(ctx, 12)
	must(err)
	if n := sequences(); n != 0 {
		t.Fatalf("00013's Down left %d sequences", n)
	}
	if n := count(`SELECT count(*) FROM task_allowance WHERE topic = 'capped'`); n != 16 {
		t.Fatalf("00013's Down made %d allowances, want 16", n)
	}
	var pgErr interface{ SQLState() string }
	if err := pushByHand(); !errors.As(err, &pgErr) || pgErr.SQLState() != "TR001" {
		t.Fatalf("a push by hand into the full topic after Down = %v, want SQLSTATE TR001", err)
	}

	_, err = p.Up(ctx) // taskpg pushes with the statements of the latest version
	must(err)
	wantRefused(push(), 4)
	must(exec(`DELETE FROM task WHERE topic = 'capped' AND identifier = 'by hand'`))
	must(push()) // room found by a count
	wantRefused(push(), 4)
}
