package web

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestSeqValuesRoundTrip(t *testing.T) {
	for _, c := range []struct {
		seqs []int64
		want []string
	}{
		{nil, nil},
		{[]int64{5}, []string{"5"}},
		{[]int64{5, 6}, []string{"5", "6"}},
		{[]int64{5, 6, 7, 9, 20, 21, 22, 23}, []string{"5-7", "9", "20-23"}},
	} {
		got := seqValues(c.seqs)
		if !slices.Equal(got, c.want) {
			t.Errorf("seqValues(%v) = %q, want %q", c.seqs, got, c.want)
		}
		back, err := parseSeqValues("seq", got, maxSelected)
		if err != nil || !slices.Equal(back, c.seqs) {
			t.Errorf("parseSeqValues(%q) = %v, %v; want %v", got, back, err, c.seqs)
		}
	}
	if got, err := parseSeqValues("seq", []string{"3,1-2", " 8 "}, 10); err != nil || !slices.Equal(got, []int64{3, 1, 2, 8}) {
		t.Errorf("parseSeqValues of a list = %v, %v", got, err)
	}
}

func TestParseSeqValuesRefusesBadRuns(t *testing.T) {
	for _, bad := range []string{"0", "-3", "x", "5-", "7-5", "1-2-3", "9223372036854775807-1", "1-9223372036854775807"} {
		if _, err := parseSeqValues("seq", []string{bad}, maxSelected); err == nil || !strings.Contains(err.Error(), "seq") {
			t.Errorf("parseSeqValues(%q): %v, want an error naming seq", bad, err)
		}
	}
	if _, err := parseSeqValues("seq", []string{"1-5", "10-14"}, 9); err == nil || !strings.Contains(err.Error(), "at most 9") {
		t.Errorf("ten tasks where nine may be named: %v", err)
	}
	var he *httpError
	if _, err := parseSeqValues("seq", []string{"1-3000000000"}, maxSelected); !errors.As(err, &he) {
		t.Errorf("a run of three billion: %v, want a bad request before it is spelled out", err)
	}
}

func TestWasValuesRoundTrip(t *testing.T) {
	f, s, r := taskapi.Failed, taskapi.Suspended, taskapi.Ready
	states := []taskapi.State{f, f, f, s, r, r}
	got := wasValues(states)
	if want := []string{"FAILED*3", "SUSPENDED", "READY*2"}; !slices.Equal(got, want) {
		t.Errorf("wasValues = %q, want %q", got, want)
	}
	if back, err := parseWasValues(got, len(states)); err != nil || !slices.Equal(back, states) {
		t.Errorf("parseWasValues(%q) = %v, %v", got, back, err)
	}
	for _, bad := range [][]string{{"FAILED*3"}, {"FAILED*7"}, {"FAILED*0", "READY*6"}, {"NOPE*6"}, {"FAILED*x"}} {
		if _, err := parseWasValues(bad, 6); err == nil || !strings.Contains(err.Error(), wasField) {
			t.Errorf("parseWasValues(%q) for 6 tasks: %v, want an error naming %s", bad, err, wasField)
		}
	}
}
