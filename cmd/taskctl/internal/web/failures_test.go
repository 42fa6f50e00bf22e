package web

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestLastError(t *testing.T) {
	for output, want := range map[string]string{
		"":                 "(no output)",
		"  boom\n\tagain ": "boom again",
		`{"attempts":[{"attempt":1,"at":"2026-01-01T00:00:00Z","error":"first"},{"attempt":2,"at":"2026-01-01T00:01:00Z","error":"second"}]}`: "second",
		`{"attempts":[`:                 `{"attempts":[`,
		strings.Repeat("é", 200):        strings.Repeat("é", 150) + "…",
		`<script>alert(1)</script>`:     `<script>alert(1)</script>`,
		"not\u200bhidden\u202eanything": "not\u200bhidden\u202eanything",
	} {
		if got := lastError(output); got != want {
			t.Errorf("lastError(%q) = %q, want %q", output, got, want)
		}
	}
}

func TestGroupFailures(t *testing.T) {
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	f := func(topic string, seq int64, state taskapi.State, err string, minutes int) failure {
		return failure{Topic: topic, Info: taskapi.Info{Task: taskapi.Task{Sequence: seq}, State: state}, Error: err,
			Finished: at.Add(time.Duration(minutes) * time.Minute)}
	}
	groups := groupFailures([]failure{
		f("b", 9, taskapi.Failed, "x", 9), f("a", 8, taskapi.Suspended, "y", 8), f("a", 7, taskapi.Failed, "x", 1),
		f("a", 5, taskapi.Failed, "x", 5), f("c", 4, taskapi.Failed, "z", 4), f("c", 3, taskapi.Failed, "y", 3),
	})
	var got []string
	for _, g := range groups {
		got = append(got, g.Error)
	}
	if !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("groups %v, want x (3), y (2), z (1)", got)
	}
	x := groups[0]
	if x.Count != 3 || !x.Newest.Equal(at.Add(9*time.Minute)) || !x.Oldest.Equal(at.Add(time.Minute)) {
		t.Errorf("group x: %d, %v to %v", x.Count, x.Oldest, x.Newest)
	}
	if len(x.Topics) != 2 || x.Topics[0].Topic != "a" || !slices.Equal(x.Topics[0].Seqs, []int64{5, 7}) || x.Topics[1].Topic != "b" {
		t.Errorf("group x's topics: %+v", x.Topics)
	}
	if y := groups[1]; !slices.Equal(y.Topics[0].States, []taskapi.State{taskapi.Suspended}) {
		t.Errorf("group y's states in a: %v", y.Topics[0].States)
	}
}

func TestFieldIs(t *testing.T) {
	input := `{"customer":{"id":42,"name":"Zoë","vip":true,"note":null,"tags":["a","b"],"o":{"k":1}}}`
	for _, c := range []struct {
		path  string
		value string
		want  bool
	}{
		{"customer.id", "42", true},
		{"customer.id", "43", false},
		{"customer.name", "Zoë", true},
		{"customer.vip", "true", true},
		{"customer.note", "null", true},
		{"customer.missing", "null", false},
		{"customer.tags.1", "b", true},
		{"customer.tags.2", "b", false},
		{"customer.tags.x", "b", false},
		{"customer.o", `{"k": 1}`, true},
		{"customer.id.deeper", "42", false},
	} {
		if got := fieldIs(input, strings.Split(c.path, "."), c.value); got != c.want {
			t.Errorf("fieldIs(%s = %s) = %v, want %v", c.path, c.value, got, c.want)
		}
	}
	for _, bad := range []string{"", "42", "not json", `{"customer":`, `"customer"`} {
		if fieldIs(bad, []string{"customer"}, "x") {
			t.Errorf("fieldIs(%q) matched", bad)
		}
	}
}

func TestConsecutive(t *testing.T) {
	infos := func(seqs ...int64) []taskapi.Info {
		out := make([]taskapi.Info, len(seqs))
		for i, s := range seqs {
			out[i].Sequence = s
		}
		return out
	}
	got := consecutive(infos(3, 4, 5, 7, 9, 10))
	want := []taskapi.Range{{From: 3, To: 5}, {From: 7, To: 7}, {From: 9, To: 10}}
	if !slices.Equal(got, want) {
		t.Errorf("consecutive = %v, want %v", got, want)
	}
	if got := consecutive(nil); len(got) != 0 {
		t.Errorf("consecutive(nil) = %v", got)
	}
}
