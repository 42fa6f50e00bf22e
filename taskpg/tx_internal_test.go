package taskpg

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
)

// conflictAfter returns a call that fails with a deadlock n times, then
// succeeds, and counts its attempts.
func conflictAfter(n int, attempts *int) func() (int, error) {
	return func() (int, error) {
		*attempts++
		if *attempts <= n {
			return 0, mapError(&pgconn.PgError{Code: "40P01"})
		}
		return 42, nil
	}
}

func TestRetryingRetriesConflictsOnAPoolOnly(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none") // never connects
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var attempts int
	if v, err := retrying(t.Context(), DB(pool), conflictAfter(2, &attempts)); err != nil || v != 42 || attempts != 3 {
		t.Errorf("on a pool, two deadlocks then success: %d, %v after %d attempts; want 42 after 3", v, err, attempts)
	}
	attempts = 0
	_, err = retrying(t.Context(), DB(pool), conflictAfter(maxAttempts, &attempts))
	if !errors.Is(err, taskapi.ErrConflict) || attempts != maxAttempts {
		t.Errorf("on a pool, deadlocks only: %v after %d attempts; want ErrConflict after %d", err, attempts, maxAttempts)
	}
	attempts = 0
	_, err = retrying(t.Context(), DB(wrapped{pool}), conflictAfter(1, &attempts))
	if !errors.Is(err, taskapi.ErrConflict) || attempts != 1 {
		t.Errorf("on another DB, which may be a transaction: %v after %d attempts; want ErrConflict at once", err, attempts)
	}
}

// wrapped is an implementation of DB of the caller's own.
type wrapped struct{ *pgxpool.Pool }
