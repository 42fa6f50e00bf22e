package bound_test

import (
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/bound"
)

func TestPostgres(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond: "SET LOCAL statement_timeout = 1500; SET LOCAL idle_in_transaction_session_timeout = 1500",
		time.Microsecond:        "SET LOCAL statement_timeout = 1; SET LOCAL idle_in_transaction_session_timeout = 1",
	} {
		if got := bound.Postgres(d); got != want {
			t.Errorf("Postgres(%v) = %q, want %q", d, got, want)
		}
	}
}
