package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// out serializes the worker's lines on stdout, which the tests read.
var out sync.Mutex

// say prints one line on stdout.
func say(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// reportEvent prints what the runtime told the observer, but the events of
// every poll: "event fenced", "event recovered" and "event KIND tasks
// SEQUENCES: ERROR" for the others, KIND the event's name with dashes for
// spaces ("batch-failed").
func reportEvent(e taskproc.Event) {
	switch e.Kind {
	case taskproc.EventPolled, taskproc.EventDispatched, taskproc.EventEmpty, taskproc.EventWoken, taskproc.EventActivated:
		return
	case taskproc.EventFenced:
		say("event fenced %s: %v", e.Owner, e.Err)
	case taskproc.EventRecovered:
		say("event recovered %s", e.Owner)
	default:
		say("event %s tasks %s: %v", strings.ReplaceAll(e.Kind.String(), " ", "-"), seqs(e.Tasks), e.Err)
	}
}

// reportCompletion prints how the completion of b came out: "completed
// SEQUENCES" or "refused SEQUENCES: ERROR".
func reportCompletion(b *taskproc.Batch, err error) {
	if err != nil {
		say("refused %s: %v", seqs(b.Tasks()), err)
		return
	}
	say("completed %s", seqs(b.Tasks()))
}

// seqs returns the tasks' sequences joined by commas.
func seqs(tasks []taskapi.Task) string {
	s := make([]string, len(tasks))
	for i, task := range tasks {
		s[i] = strconv.FormatInt(task.Sequence, 10)
	}
	return strings.Join(s, ",")
}
