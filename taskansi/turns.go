package taskansi

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"weak"
)

// SQLite runs one writing transaction at a time (taskansi begins its own
// with _txlock=immediate), and its busy handler does not queue: a writer
// waiting for the lock sleeps and tries again, and a newcomer may take the
// lock in between. Under load a writer of a busy process could so wait
// past busy_timeout, and fail with SQLITE_BUSY, while others came and
// went. The transactions that taskansi begins itself on a *sql.DB of
// SQLite therefore take turns within the process, first come first
// served, before they begin: they wait for each other, not for a time.
// Transactions of the caller (and of other processes) still meet them at
// SQLite's lock, as before.

// turns holds a channel of one slot per *sql.DB of SQLite that taskansi
// began a transaction on, dropped when the *sql.DB is collected.
var turns sync.Map // weak.Pointer[sql.DB] → chan struct{}

// takeTurn waits for db's turn, or until ctx ends, and returns the
// function that passes the turn on. Waiters get it in the order they came:
// a channel hands its slot to the sender that waited longest.
func takeTurn(ctx context.Context, db *sql.DB) (func(), error) {
	key := weak.Make(db)
	v, loaded := turns.LoadOrStore(key, make(chan struct{}, 1))
	if !loaded {
		runtime.AddCleanup(db, func(key weak.Pointer[sql.DB]) { turns.Delete(key) }, key)
	}
	turn := v.(chan struct{})
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
