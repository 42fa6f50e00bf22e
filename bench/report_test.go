package main

import "testing"

func TestShellWordsQuotesWhatAShellWouldSplit(t *testing.T) {
	got := shellWords([]string{"--json", "results/baseline.json", "--baseline", "", "--notes", "it's busy"})
	want := `--json results/baseline.json --baseline '' --notes 'it'\''s busy'`
	if got != want {
		t.Errorf("shellWords = %s, want %s", got, want)
	}
}
