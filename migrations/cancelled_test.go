package migrations_test

import (
	"maps"
	"path/filepath"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
)

// SQLite's 00011 builds the task table anew (see the migration): the tasks,
// the counter of sequences, the indexes, the triggers and the view must
// come through it, up and down, and CANCELLED (9) must go in and out.
func TestSQLiteCancelledRebuildKeepsTheTable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := testdb.OpenSQLite(t, filepath.Join(t.TempDir(), "tasks.db"), testdb.SQLiteOptions)
	p, err := migrations.NewProvider(db, migrations.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	last := func() int64 {
		t.Helper()
		var seq int64
		if err := db.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'task'`).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	objects := func() map[string]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT name, type FROM sqlite_master WHERE tbl_name IN ('task', 'task_topic', 'task_pretty') AND name NOT LIKE 'sqlite_autoindex_%'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		found := map[string]string{}
		for rows.Next() {
			var name, kind string
			if err := rows.Scan(&name, &kind); err != nil {
				t.Fatal(err)
			}
			found[name] = kind
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return found
	}
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	before := objects()
	exec(`INSERT INTO task_topic (topic) VALUES ('t')`)
	exec(`INSERT INTO task (topic, identifier, state, not_before) VALUES ('t', 'a', 1, '2026-01-01 00:00:00.000000'), ('t', 'b', 0, NULL), ('t', 'c', 6, NULL)`)
	exec(`DELETE FROM task WHERE identifier = 'c'`) // its sequence is never handed out again
	if _, err := p.UpTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if after := objects(); !maps.Equal(after, before) {
		t.Errorf("after 00011 the table has %v, before %v", after, before)
	}
	if got := last(); got != 3 {
		t.Errorf("after 00011 the last sequence is %d, want 3", got)
	}
	exec(`INSERT INTO task (topic, identifier, state) VALUES ('t', 'd', 9)`)
	var seq int64
	var state string
	if err := db.QueryRowContext(ctx, `SELECT sequence, state FROM task_pretty WHERE identifier = 'd'`).Scan(&seq, &state); err != nil {
		t.Fatal(err)
	}
	if seq != 4 || state != "CANCELLED" {
		t.Errorf("a new task is %d %s, want 4 CANCELLED", seq, state)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO task (topic, identifier) VALUES ('nowhere', 'x')`); err == nil {
		t.Error("a task of an unknown topic was stored")
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if got := objects(); !maps.Equal(got, before) {
		t.Errorf("after the Down of 00011 the table has %v, before %v", got, before)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM task WHERE state = 3 AND identifier = 'd'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("the cancelled task after Down: %d FAILED, %v", n, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO task (topic, identifier, state) VALUES ('t', 'e', 9)`); err == nil {
		t.Error("after the Down of 00011 the state 9 was stored")
	}
	if got := last(); got != 4 {
		t.Errorf("after the Down of 00011 the last sequence is %d, want 4", got)
	}
	exec(`DELETE FROM task_topic WHERE topic = 't'`)
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM task`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a destroyed topic left %d tasks, %v", n, err)
	}
}
