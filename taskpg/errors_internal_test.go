package taskpg

import (
	"errors"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestMapError(t *testing.T) {
	for _, c := range []struct {
		err  *pgconn.PgError
		want error
	}{
		{&pgconn.PgError{Code: "23514"}, taskapi.ErrUnknownTopic},
		{&pgconn.PgError{Code: "23514", ConstraintName: "task_state_check"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22021"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22P05"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "22001"}, taskapi.ErrInvalidArgument},
		{&pgconn.PgError{Code: "23514", ConstraintName: "task_destroyed"}, taskapi.ErrUnknownTopic},
		{&pgconn.PgError{Code: "40001"}, taskapi.ErrConflict},
		{&pgconn.PgError{Code: "40P01"}, taskapi.ErrConflict},
	} {
		err := wrapf(c.err, "call %d", 1)
		var pgErr *pgconn.PgError
		if !errors.Is(err, c.want) || !errors.As(err, &pgErr) || pgErr != c.err {
			t.Errorf("wrapf(%v) = %v, want %v wrapping the driver's error", c.err.Code, err, c.want)
		}
	}
	for _, err := range []error{&pgconn.PgError{Code: "22P02"}, &pgconn.PgError{Code: "55P03"}, io.EOF} {
		if got := mapError(err); got != err {
			t.Errorf("mapError(%v) = %v, want it unchanged", err, got)
		}
	}
}
