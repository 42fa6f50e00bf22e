package taskansi

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestRetryingRetriesConflictsOnAHandleOfItsOwnOnly(t *testing.T) {
	t.Parallel()
	repo, err := New(MySQL, "o")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(noConnector{}) // never connects
	defer db.Close()
	attempts := 0
	deadlocks := func(n int) func(DB) error {
		return func(DB) error {
			if attempts++; attempts <= n {
				return &MySQLError{Number: mysqlDeadlock}
			}
			return nil
		}
	}
	if err := repo.retrying(t.Context(), db, deadlocks(2)); err != nil || attempts != 3 {
		t.Errorf("on a *sql.DB, two deadlocks then success: %v after %d attempts; want success after 3", err, attempts)
	}
	attempts = 0
	if err := repo.retrying(t.Context(), db, deadlocks(maxAttempts)); !errors.Is(mapError(err), taskapi.ErrConflict) || attempts != maxAttempts {
		t.Errorf("on a *sql.DB, deadlocks only: %v after %d attempts; want ErrConflict after %d", err, attempts, maxAttempts)
	}
	attempts = 0
	err = repo.retrying(t.Context(), (*sql.Tx)(nil), deadlocks(1))
	if !errors.Is(mapError(err), taskapi.ErrConflict) || attempts != 1 {
		t.Errorf("in a *sql.Tx: %v after %d attempts; want ErrConflict at once", err, attempts)
	}
}

// noConnector is a driver.Connector that never connects.
type noConnector struct{}

func (noConnector) Connect(context.Context) (driver.Conn, error) {
	return nil, errors.New("no database")
}
func (noConnector) Driver() driver.Driver { return nil }
