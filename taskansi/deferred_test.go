package taskansi_test

import (
	"cmp"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Polls in callers' transactions take only due tasks and skip the rows that
// another owner's poll locked: on MySQL, where such a poll reads its
// candidates first and locks them by points window after window, and on
// PostgreSQL. (SQLite has one writer: its transactions take turns.)
func TestPollsInTransactionsTakeOnlyDueTasks(t *testing.T) {
	t.Parallel()
	for dialect, open := range servers() {
		t.Run(dialect.String(), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := open(t)
			var repos []*taskansi.Repository
			for _, owner := range []string{"first", "second"} {
				repo, err := taskansi.New(dialect, owner)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := repo.Register(ctx, db); err != nil {
					t.Fatal(err)
				}
				repos = append(repos, repo)
			}
			if _, err := repos[0].Initialize(ctx, db, "t"); err != nil {
				t.Fatal(err)
			}
			var creations []taskapi.Creation
			for i := range 12 {
				c := taskapi.Creation{Identifier: "x"}
				switch i % 3 {
				case 1:
					c.NotBefore = time.Now().Add(time.Hour)
				case 2:
					c.NotBefore = time.Now().Add(-time.Duration(i) * time.Minute)
				}
				creations = append(creations, c)
			}
			tasks, err := repos[0].Push(ctx, db, "t", taskapi.Append, creations...)
			if err != nil {
				t.Fatal(err)
			}
			var due []taskapi.Task
			for i, task := range tasks {
				if i%3 != 1 {
					due = append(due, task)
				}
			}
			first, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = first.Rollback() }()
			held, err := repos[0].Poll(ctx, first, "t", 3)
			if err != nil || len(held) != 3 {
				t.Fatalf("Poll(3) in the first transaction = %v, %v", held, err)
			}
			second, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = second.Rollback() }()
			rest, err := repos[1].Poll(ctx, second, "t", 10)
			if err != nil {
				t.Fatal(err)
			}
			// On PostgreSQL the first poll's branches locked three tasks
			// more than it took, which the second skips until the first
			// transaction ends; on MySQL it locked only what it took.
			got := sortedTasks(held, rest)
			if !isSubset(got, due) || dialect == taskansi.MySQL && len(got) != len(due) {
				t.Errorf("polls in two transactions took %v and %v, want the due tasks among %v, each once", held, rest, due)
			}
			if err := first.Rollback(); err != nil {
				t.Fatal(err)
			}
			again, err := repos[0].Poll(ctx, db, "t", 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := sortedTasks(rest, again); !slices.Equal(got, due) {
				t.Errorf("after the first transaction rolled back, a poll took %v beside %v, want the rest of %v", again, rest, due)
			}
		})
	}
}

// sortedTasks returns the tasks of lists by sequence.
func sortedTasks(lists ...[]taskapi.Task) []taskapi.Task {
	all := slices.Concat(lists...)
	slices.SortFunc(all, func(a, b taskapi.Task) int { return cmp.Compare(a.Sequence, b.Sequence) })
	return all
}

// isSubset reports whether every task of sorted tasks, each once, is in
// sorted of.
func isSubset(tasks, of []taskapi.Task) bool {
	for i, task := range tasks {
		if i > 0 && tasks[i-1] == task || !slices.Contains(of, task) {
			return false
		}
	}
	return true
}

// servers returns, by dialect, a function that opens a fresh migrated
// database of each database server: MySQL (or MariaDB) and PostgreSQL.
func servers() map[taskansi.Dialect]func(t *testing.T) *sql.DB {
	return map[taskansi.Dialect]func(t *testing.T) *sql.DB{
		taskansi.MySQL: func(t *testing.T) *sql.DB { return testdb.MySQL(t) },
		taskansi.Postgres: func(t *testing.T) *sql.DB {
			db, err := sql.Open("pgx", testdb.PostgresURL(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}
}
