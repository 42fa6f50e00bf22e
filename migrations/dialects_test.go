package migrations_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

// tableCount counts four of taskrepo's tables on SQLite or MySQL.
var tableCount = map[migrations.Dialect]string{
	migrations.SQLite: `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('task', 'task_topic', 'task_owner', 'task_schedule')`,
	migrations.MySQL: `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN ('task', 'task_topic', 'task_owner', 'task_schedule')`,
}

func testUpResetUp(t *testing.T, db *sql.DB, dialect migrations.Dialect) {
	ctx := t.Context()
	count := func() int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, tableCount[dialect]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := migrations.Up(ctx, db, dialect); err != nil { // migrated once by testdb
		t.Fatalf("second Up: %v", err)
	}
	if err := migrations.Reset(ctx, db, dialect); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after Reset %d task tables remain", n)
	}
	errs := make(chan error, 3)
	for range 3 { // concurrent on MySQL: three sessions of the pool
		go func() { errs <- migrations.Up(context.WithoutCancel(ctx), db, dialect) }()
		if dialect == migrations.SQLite {
			if err := <-errs; err != nil {
				t.Fatalf("Up after Reset: %v", err)
			}
		}
	}
	if dialect == migrations.MySQL {
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("concurrent Up: %v", err)
			}
		}
	}
	if n := count(); n != 4 {
		t.Fatalf("after Up %d of 4 task tables exist", n)
	}
	testPrettyView(t, db)
}

// testPrettyView checks that task_pretty names the states, CANCELLED (a
// state that the CHECK of 00001 refused) included.
func testPrettyView(t *testing.T, db *sql.DB) {
	ctx := t.Context()
	for _, s := range []string{
		`INSERT INTO task_topic (topic) VALUES ('t')`,
		`INSERT INTO task (topic, identifier, state, descent) VALUES ('t', 'a', 0, 8), ('t', 'b', 6, 3), ('t', 'c', 9, 1)`,
	} {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT state, descent FROM task_pretty ORDER BY sequence`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var state, descent string
		if err := rows.Scan(&state, &descent); err != nil {
			t.Fatal(err)
		}
		got = append(got, state, descent)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"ACTIVE", "REDUNDANT", "SUCCEEDED", "FAILED", "CANCELLED", "READY"}
	if !slices.Equal(got, want) {
		t.Errorf("task_pretty = %q, want %q", got, want)
	}
}

func TestSQLiteUpResetUp(t *testing.T) {
	t.Parallel()
	testUpResetUp(t, testdb.SQLite(t), migrations.SQLite)
}

func TestMySQLUpResetUpConcurrently(t *testing.T) {
	t.Parallel()
	testUpResetUp(t, testdb.MySQL(t), migrations.MySQL)
}

func TestUnknownDialect(t *testing.T) {
	t.Parallel()
	if err := migrations.Up(t.Context(), nil, "oracle"); err == nil {
		t.Error("Up with an unknown dialect succeeded")
	}
}
