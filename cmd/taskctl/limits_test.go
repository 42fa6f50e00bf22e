package main

import (
	"testing"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// TestLimitsSaid checks the words and the table cell of every shape of
// limits, those the command tests do not reach among them: a limit per
// identifier alone.
func TestLimitsSaid(t *testing.T) {
	cases := []struct {
		limits     taskapi.Limits
		text, cell string
	}{
		{taskapi.Limits{}, "orders has no limits: its polls take any number of tasks", "-"},
		{taskapi.Limits{Active: 5}, "orders: at most 5 ACTIVE tasks across the fleet", "5"},
		{taskapi.Limits{PerIdentifier: 2}, "orders: at most 2 ACTIVE tasks per identifier across the fleet", "2 per id"},
		{taskapi.Limits{PerIdentifier: 1}, "orders: at most 1 ACTIVE task per identifier across the fleet", "1 per id"},
		{taskapi.Limits{Active: 1, PerIdentifier: 1}, "orders: at most 1 ACTIVE task across the fleet, at most 1 per identifier", "1 / 1 per id"},
		{taskapi.Limits{Active: 5000, PerIdentifier: 2}, "orders: at most 5000 ACTIVE tasks across the fleet, at most 2 per identifier", "5000 / 2 per id"},
	}
	for _, c := range cases {
		if got := limitsText("orders", c.limits); got != c.text {
			t.Errorf("limitsText(%+v) = %q, want %q", c.limits, got, c.text)
		}
		if got := ops.LimitsCell(c.limits, decimal); got != c.cell {
			t.Errorf("LimitsCell(%+v) = %q, want %q", c.limits, got, c.cell)
		}
	}
}
