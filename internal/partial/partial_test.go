package partial

import (
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/migrations"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestPredicate(t *testing.T) {
	for _, c := range []struct {
		states []taskapi.State
		want   string
	}{
		{nil, ""},
		{[]taskapi.State{taskapi.Failed}, Rare},
		{[]taskapi.State{taskapi.Failed, taskapi.Suspended}, Rare},
		{[]taskapi.State{taskapi.Expired, taskapi.Filtered, taskapi.Recreated, taskapi.Redundant}, Rare},
		{[]taskapi.State{taskapi.Cancelled}, Rare},
		{[]taskapi.State{taskapi.Active}, Active},
		{[]taskapi.State{taskapi.Active, taskapi.Active}, Active},
		{[]taskapi.State{taskapi.Succeeded}, ""},
		{[]taskapi.State{taskapi.Ready}, ""},
		{[]taskapi.State{taskapi.Failed, taskapi.Succeeded}, ""},
		{[]taskapi.State{taskapi.Active, taskapi.Failed}, ""},
	} {
		if got := Predicate(c.states); got != c.want {
			t.Errorf("Predicate(%v) = %q, want %q", c.states, got, c.want)
		}
	}
}

// The predicates must be those of the migrations word for word: SQLite
// uses a partial index only for a query that repeats its predicate.
func TestPredicatesAreThoseOfTheMigrations(t *testing.T) {
	for file, predicate := range map[string]string{
		"postgres/00012_cancelled.sql": Rare, "sqlite/00011_cancelled.sql": Rare,
		"postgres/00001_tasks.sql": Active, "sqlite/00001_tasks.sql": Active,
	} {
		b, err := migrations.Files.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), ") WHERE "+predicate+";") {
			t.Errorf("%s declares no index WHERE %s", file, predicate)
		}
	}
}
