package migrations

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pressly/goose/v3/database"
)

// legacy lists, per dialect, the migrations that taskrepo recorded in goose's
// default version table before it had VersionTable of its own, each with a
// query that tells whether a database's schema has it.
var legacy = map[Dialect][]struct {
	version int64
	present string // one row with one boolean (or 0/1) column
}{
	Postgres: {
		{1, `SELECT to_regclass('task_topic') IS NOT NULL`},
		// 00002 turned the creation index into a BRIN index.
		{2, `SELECT EXISTS (SELECT FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_am AS am ON am.oid = c.relam
                            WHERE c.oid = to_regclass('task_created') AND am.amname = 'brin')`},
	},
	SQLite: {
		{1, `SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'task_topic'`},
	},
	MySQL: {
		{1, `SELECT COUNT(*) > 0 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'task_topic'`},
	},
}

// adopt records in VersionTable the migrations of a database that an earlier
// taskrepo migrated into goose's default table, unless VersionTable exists.
// It holds the session lock meanwhile, so that processes migrating at once
// adopt once.
func (s *setup) adopt(ctx context.Context, db *sql.DB) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.locker != nil {
		if err := s.locker.SessionLock(ctx, conn); err != nil {
			return err
		}
		defer func() {
			if unlockErr := s.locker.SessionUnlock(context.WithoutCancel(ctx), conn); err == nil {
				err = unlockErr
			}
		}()
	}
	store, err := database.NewStore(database.Dialect(s.goose), VersionTable)
	if err != nil {
		return err
	}
	exists, err := tableExists(ctx, store, conn)
	if err != nil || exists {
		return err
	}
	applied, err := s.applied(ctx, conn)
	if err != nil || len(applied) == 0 {
		return err
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	err = store.CreateVersionTable(ctx, tx)
	for _, version := range append([]int64{0}, applied...) {
		if err == nil {
			err = store.Insert(ctx, tx, database.InsertRequest{Version: version})
		}
	}
	if err == nil {
		return tx.Commit()
	}
	return errors.Join(err, tx.Rollback())
}

// applied returns the legacy migrations that the schema on conn has, in
// order; none for a database without taskrepo's tables.
func (s *setup) applied(ctx context.Context, conn *sql.Conn) ([]int64, error) {
	var versions []int64
	for _, m := range legacy[s.dialect] {
		var present bool
		if err := conn.QueryRowContext(ctx, m.present).Scan(&present); err != nil {
			return nil, err
		}
		if !present {
			break
		}
		versions = append(versions, m.version)
	}
	return versions, nil
}

// tableExists reports whether store's version table exists. goose's stores
// answer directly except on SQLite, where a read of the zero version tells.
func tableExists(ctx context.Context, store database.Store, conn *sql.Conn) (bool, error) {
	exists, err := store.(database.StoreExtender).TableExists(ctx, conn) // goose's own stores extend Store
	if !errors.Is(err, errors.ErrUnsupported) {
		return exists, err
	}
	_, err = store.GetMigration(ctx, conn, 0)
	return err == nil, nil
}
