package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const orderTable = `CREATE TABLE IF NOT EXISTS demo_order (
    id varchar(100) PRIMARY KEY, total int NOT NULL, invoiced boolean NOT NULL DEFAULT FALSE)`

// runPostgres runs the demo with taskpg on a pgx pool.
func runPostgres(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrations.Up(ctx, stdlib.OpenDBFromPool(pool), migrations.Postgres); err != nil {
		return err
	}
	if _, err := pool.Exec(ctx, orderTable); err != nil {
		return err
	}
	return run(ctx, world[taskpg.DB]{
		db: pool,
		newRepo: func(owner string) (taskapi.Repository[taskpg.DB], error) {
			return taskpg.New(owner)
		},
		inTx: taskpg.Transact(pool),
		insertOrder: func(ctx context.Context, tx taskpg.DB, id string, total int) error {
			_, err := tx.Exec(ctx, "INSERT INTO demo_order (id, total) VALUES ($1, $2)", id, total)
			return err
		},
		markInvoiced: func(ctx context.Context, tx taskpg.DB, id string) error {
			_, err := tx.Exec(ctx, "UPDATE demo_order SET invoiced = TRUE WHERE id = $1", id)
			return err
		},
	})
}

// runSQLite runs the demo with taskansi on a SQLite file that it removes
// afterwards.
func runSQLite(ctx context.Context) (err error) {
	dir, err := os.MkdirTemp("", "taskdemo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "tasks.db")+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrations.Up(ctx, db, migrations.SQLite); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, orderTable); err != nil {
		return err
	}
	return run(ctx, world[taskansi.DB]{
		db: db,
		newRepo: func(owner string) (taskapi.Repository[taskansi.DB], error) {
			return taskansi.New(taskansi.SQLite, owner)
		},
		inTx: taskansi.Transact(db, nil),
		insertOrder: func(ctx context.Context, tx taskansi.DB, id string, total int) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO demo_order (id, total) VALUES (?, ?)", id, total)
			return err
		},
		markInvoiced: func(ctx context.Context, tx taskansi.DB, id string) error {
			_, err := tx.ExecContext(ctx, "UPDATE demo_order SET invoiced = TRUE WHERE id = ?", id)
			return err
		},
	})
}
