package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/migrations"
)

// openDB opens a database/sql handle on t (MySQL or SQLite). With
// t.readOnly, every connection is made read-only as it opens, by the
// statement of its dialect: MySQL's and MariaDB's session transactions
// become READ ONLY, SQLite's connection refuses any change to the file.
func openDB(t target) (*sql.DB, error) {
	name, setting, dsn := "sqlite", "PRAGMA query_only = ON", t.dsn
	if t.dialect == migrations.MySQL {
		name, setting = "mysql", "SET SESSION TRANSACTION READ ONLY"
	}
	db, err := sql.Open(name, dsn)
	if err != nil || !t.readOnly {
		return db, err
	}
	d := db.Driver()
	_ = db.Close() // it opened no connection: only its driver was wanted
	if t.dialect == migrations.SQLite {
		// BEGIN IMMEDIATE takes the write lock, which query_only refuses.
		dsn = strings.Replace(dsn, "_txlock=immediate", "_txlock=deferred", 1)
	}
	return sql.OpenDB(readOnlyConnector{dsn: dsn, driver: d, setting: setting}), nil
}

var _ driver.Connector = readOnlyConnector{}

// readOnlyConnector runs setting on every connection it opens, before the
// connection serves anything.
type readOnlyConnector struct {
	dsn     string
	driver  driver.Driver
	setting string
}

func (c readOnlyConnector) Driver() driver.Driver { return c.driver }

func (c readOnlyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	exec, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("the %T driver cannot run statements on a new connection", c.driver)
	}
	if _, err := exec.ExecContext(ctx, c.setting, nil); err != nil {
		_ = conn.Close() // the connection was never used
		return nil, fmt.Errorf("make the connection read-only (%s): %w", c.setting, err)
	}
	return conn, nil
}
