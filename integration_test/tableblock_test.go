package integration_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// tableBlock is how a session of its own makes the statements of others on
// taskrepo's tables wait, on one kind of database: conformance.Backend.Block.
type tableBlock struct {
	// lock takes the locks on conn, a connection of their own.
	lock func(ctx context.Context, conn *sql.Conn) error
	// unlock lets them go.
	unlock string
	// busy counts the other sessions of the database that still run a
	// statement; empty where a statement ends with its caller (SQLite).
	busy string
}

// settleWithin bounds how long the statements that waited for a block may
// take to end once it is released.
const settleWithin = 20 * time.Second

// postgresBlock takes every taskrepo table of the schema public (the task
// partitions with their parent) in ACCESS EXCLUSIVE mode, in a transaction:
// every statement that names one waits, reads too.
var postgresBlock = tableBlock{
	lock: func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, "BEGIN")
		if err == nil {
			_, err = conn.ExecContext(ctx, `DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT schemaname, tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'task%' LOOP
        EXECUTE format('LOCK TABLE %I.%I IN ACCESS EXCLUSIVE MODE', r.schemaname, r.tablename);
    END LOOP;
END $$`)
		}
		return err
	},
	unlock: "ROLLBACK",
	busy: `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
        AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'`,
}

// mysqlBlock takes every taskrepo table of the database with LOCK TABLES …
// WRITE: every statement of another session that names one waits.
var mysqlBlock = tableBlock{
	lock: func(ctx context.Context, conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES
            WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME LIKE 'task%'`)
		if err != nil {
			return err
		}
		var locks []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			locks = append(locks, "`"+name+"` WRITE")
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, "LOCK TABLES "+strings.Join(locks, ", "))
		return err
	},
	unlock: "UNLOCK TABLES",
	busy: `SELECT COUNT(*) FROM information_schema.PROCESSLIST
        WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND <> 'Sleep'`,
}

// sqliteBlock holds the write lock of the database file in an immediate
// transaction: writers wait (busy_timeout), readers of the write-ahead log
// do not.
var sqliteBlock = tableBlock{
	lock: func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE")
		return err
	},
	unlock: "ROLLBACK",
}

// on blocks the tables of db and returns the function that releases them
// and waits for the statements that waited to end.
func (b tableBlock) on(t *testing.T, db *sql.DB) (release func()) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatalf("block: connect: %v", err)
	}
	if err := b.lock(ctx, conn); err != nil {
		conn.Close()
		t.Fatalf("block: lock the tables: %v", err)
	}
	return func() {
		t.Helper()
		_, err := conn.ExecContext(ctx, b.unlock)
		conn.Close()
		if err != nil {
			t.Fatalf("block: %s: %v", b.unlock, err)
		}
		b.settle(t, db)
	}
}

// settle waits until no other session of db runs a statement, so that a
// statement whose caller gave up on it while it waited has ended, and what
// it did, if anything, is seen.
func (b tableBlock) settle(t *testing.T, db *sql.DB) {
	t.Helper()
	if b.busy == "" {
		return
	}
	for deadline := time.Now().Add(settleWithin); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := db.QueryRowContext(t.Context(), b.busy).Scan(&n); err != nil {
			t.Fatalf("block: count the busy sessions: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("block: %d sessions still run a statement %v after the tables were released", n, settleWithin)
		}
	}
}

// pg is Block for taskpg: the block's session comes from the pool.
func (b tableBlock) pg(t *testing.T, db taskpg.DB) func() {
	sqlDB := stdlib.OpenDBFromPool(db.(*pgxpool.Pool))
	release := b.on(t, sqlDB)
	return func() {
		release()
		sqlDB.Close()
	}
}

// ansi is Block for taskansi.
func (b tableBlock) ansi(t *testing.T, db taskansi.DB) func() { return b.on(t, db.(*sql.DB)) }
