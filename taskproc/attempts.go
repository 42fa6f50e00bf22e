package taskproc

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// maxAttemptError bounds the text kept of each attempt's error, so that a
// task's log stays small however long its errors are.
const maxAttemptError = 1000

// An Attempt is a run of a task that failed transiently.
type Attempt struct {
	Number int       `json:"attempt"`
	At     time.Time `json:"at"` // when the run ended
	Error  string    `json:"error"`
}

// attemptLog is the output of a task that failed transiently: every failed
// attempt so far, oldest first. It stays the task's output while the task
// waits for its next attempt, and after its last.
type attemptLog struct {
	Attempts []Attempt `json:"attempts"`
}

// Attempts returns the failed attempts that output, a task's output, records,
// oldest first, and false when output is no such record (the task never
// failed transiently, or a later completion replaced the record).
func Attempts(output string) ([]Attempt, bool) {
	if !strings.HasPrefix(output, `{"attempts":`) {
		return nil, false
	}
	var l attemptLog
	if json.Unmarshal([]byte(output), &l) != nil {
		return nil, false
	}
	return l.Attempts, true
}

// nextAttempt returns the output of a task whose output was previous, once
// its run that ended at failed with cause: the record with one attempt more,
// and that attempt's number.
func nextAttempt(previous string, at time.Time, cause error) (string, int) {
	attempts, _ := Attempts(previous)
	n := len(attempts) + 1
	attempts = append(attempts, Attempt{Number: n, At: at.UTC(), Error: truncate(cause.Error(), maxAttemptError)})
	out, err := json.Marshal(attemptLog{Attempts: attempts})
	if err != nil { // cannot happen: the types marshal
		panic(err)
	}
	return string(out), n
}

// truncate shortens s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
