package taskansi_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
)

// openSQLite opens a migrated SQLite database in dir.
func openSQLite(ctx context.Context, dir string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tasks.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		log.Fatal(err)
	}
	if err := migrations.Up(ctx, db, migrations.SQLite); err != nil {
		log.Fatal(err)
	}
	return db
}

// exampleRepo opens a migrated SQLite database in dir and returns it with
// a repository of owner whose topic is initialized.
func exampleRepo(ctx context.Context, dir, owner, topic string) (*sql.DB, *taskansi.Repository) {
	db := openSQLite(ctx, dir)
	repo, err := taskansi.New(taskansi.SQLite, owner)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, db, topic); err != nil {
		log.Fatal(err)
	}
	return db, repo
}

// A producer pushes tasks inside its own transaction on an embedded SQLite
// database; a consumer polls them and completes them; an operator counts.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "taskansi-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, repo := exampleRepo(ctx, dir, "worker-1", "mail")
	defer db.Close()
	if _, err := repo.Register(ctx, db); err != nil {
		log.Fatal(err)
	}

	// Producer: the tasks commit together with the rest of the transaction.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	_, err = repo.Push(ctx, tx, "mail", taskapi.Replace,
		taskapi.Creation{Identifier: "user-42", Input: "welcome"},
		taskapi.Creation{Identifier: "user-7", Input: "welcome"})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	// Consumer: one identifier is never processed twice at once.
	tasks, err := repo.Poll(ctx, db, "mail", 10, taskapi.SingularByIdentifier)
	if err != nil {
		log.Fatal(err)
	}
	for _, task := range tasks {
		fmt.Println("sending", task.Input, "to", task.Identifier)
		decision := taskapi.Decision{Result: taskapi.Success}
		if err := repo.Complete(ctx, db, "mail", taskapi.Completion{Task: task, Decision: decision}); err != nil {
			log.Fatal(err)
		}
	}

	// Operator.
	counts, err := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("succeeded:", counts["mail"][taskapi.Succeeded].Count)
	// Output:
	// sending welcome to user-42
	// sending welcome to user-7
	// succeeded: 2
}

// Cancel ends Ready, Active and Suspended tasks by sequence, with a reason
// that becomes their output; CancelIdentifier ends an identifier's Ready
// tasks. Tasks that already ended are left as they are.
func ExampleRepository_Cancel() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "taskansi-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, repo := exampleRepo(ctx, dir, "operator", "reports")
	defer db.Close()
	tasks, err := repo.Push(ctx, db, "reports", taskapi.Append,
		taskapi.Creation{Identifier: "tenant-1/daily"},
		taskapi.Creation{Identifier: "tenant-2/daily"})
	if err != nil {
		log.Fatal(err)
	}

	cancelled, err := repo.Cancel(ctx, db, "reports", "the tenant left", tasks[0].Sequence)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range cancelled {
		info, _, err := repo.Lookup(ctx, db, "reports", c.Task.Sequence)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %v from %v, %q\n", info.Identifier, info.State, c.From, info.Output)
	}
	counts, err := repo.Count(ctx, db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("still ready:", counts["reports"][taskapi.Ready].Count)
	// Output:
	// tenant-1/daily: CANCELLED from READY, "cancelled: the tenant left"
	// still ready: 1
}
