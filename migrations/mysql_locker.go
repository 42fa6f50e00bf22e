package migrations

import (
	"context"
	"database/sql"
	"fmt"
)

// mysqlLock and mysqlUnlock take and release the named lock that serializes
// migrations. Lock names are server-wide and at most 64 characters, so the
// name carries the MD5 of the database's name.
const (
	mysqlLock   = `SELECT GET_LOCK(CONCAT('taskrepo.migrations.', MD5(COALESCE(DATABASE(), ''))), ?)`
	mysqlUnlock = `SELECT RELEASE_LOCK(CONCAT('taskrepo.migrations.', MD5(COALESCE(DATABASE(), ''))))`
)

// mysqlLockWait is how long one GET_LOCK waits, in seconds, before SessionLock
// looks at its context again.
const mysqlLockWait = 5

// mysqlLocker is a goose lock.SessionLocker for MySQL and MariaDB on a named
// lock (GET_LOCK), which the server releases by itself should the session end.
type mysqlLocker struct{}

// SessionLock waits for the lock until ctx is done.
func (mysqlLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, mysqlLock, mysqlLockWait).Scan(&got); err != nil {
			return fmt.Errorf("GET_LOCK: %w", err)
		}
		if got.Valid && got.Int64 == 1 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("GET_LOCK: %w", err)
		}
	}
}

// SessionUnlock releases the lock.
func (mysqlLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	var released sql.NullInt64
	if err := conn.QueryRowContext(ctx, mysqlUnlock).Scan(&released); err != nil {
		return fmt.Errorf("RELEASE_LOCK: %w", err)
	}
	return nil
}
