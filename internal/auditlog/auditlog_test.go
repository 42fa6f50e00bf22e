package auditlog

import (
	"math"
	"strings"
	"testing"
)

// TestNumbered numbers every placeholder of the statements in order.
func TestNumbered(t *testing.T) {
	got := Numbered(Insert + Returning)
	if strings.Contains(got, "?") || !strings.Contains(got, "$1, $2, $3, $4, $5, $6, $7)") {
		t.Errorf("Numbered(Insert) = %q", got)
	}
	if got := Numbered(Page); !strings.HasSuffix(got, "WHERE id < $1 ORDER BY id DESC LIMIT $2") {
		t.Errorf("Numbered(Page) = %q", got)
	}
}

// TestCursor reads every entry from zero, and below the cursor otherwise.
func TestCursor(t *testing.T) {
	if got := Cursor(0); got != math.MaxInt64 {
		t.Errorf("Cursor(0) = %d, want every entry", got)
	}
	if got := Cursor(42); got != 42 {
		t.Errorf("Cursor(42) = %d", got)
	}
}
