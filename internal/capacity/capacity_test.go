package capacity

import (
	"database/sql"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestColumnsRoundTrip(t *testing.T) {
	for _, c := range []taskapi.Capacity{{}, {Ready: 5}, {PerIdentifier: 3}, {Ready: 7, PerIdentifier: 2}} {
		ready, each := Columns(c)
		var r, e sql.NullInt64
		if ready != nil {
			r = sql.NullInt64{Int64: ready.(int64), Valid: true}
		}
		if each != nil {
			e = sql.NullInt64{Int64: each.(int64), Valid: true}
		}
		if got := Of(r, e); got != c {
			t.Errorf("Of(Columns(%+v)) = %+v", c, got)
		}
		if (ready == nil) != (c == taskapi.Capacity{}) {
			t.Errorf("Columns(%+v): capacity %v, want NULL only for none", c, ready)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		code, detail string
		want         *taskapi.CapacityError
	}{
		{"TR001", "3 4", &taskapi.CapacityError{Topic: "t", Capacity: 3, Count: 4}},
		{"TR004", "2 3 tenant 7", &taskapi.CapacityError{Topic: "t", Identifier: "tenant 7", Capacity: 2, Count: 3}},
		{"TR004", "2 3", nil},
		{"TR001", "x 3", nil},
		{"23505", "3 4", nil},
	} {
		got, ok := Refused(tc.code, tc.detail, "t")
		if ok != (tc.want != nil) || ok && *got != *tc.want {
			t.Errorf("Refused(%q, %q) = %+v, %v, want %+v", tc.code, tc.detail, got, ok, tc.want)
		}
	}
}
