package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// failWith polls the next READY task of topic as owner and fails it with
// output, as taskproc's retries do with their log of attempts.
func failWith(t *testing.T, s store, owner, topic, output string) {
	t.Helper()
	var err error
	switch b := s.(type) {
	case *backend[taskpg.DB]:
		err = failOne(t.Context(), b, owner, topic, output)
	case *backend[taskansi.DB]:
		err = failOne(t.Context(), b, owner, topic, output)
	default:
		t.Fatalf("no consumer for %T", s)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// failOne registers owner on b, polls one task of topic and fails it with
// output.
func failOne[Tx any](ctx context.Context, b *backend[Tx], owner, topic, output string) error {
	repo, err := b.newRepo(owner)
	if err != nil {
		return err
	}
	if _, err := repo.Register(ctx, b.db); err != nil {
		return err
	}
	return b.transact(ctx, func(tx Tx) error {
		tasks, err := repo.Poll(ctx, tx, topic, 1)
		if err != nil || len(tasks) != 1 {
			return fmt.Errorf("poll one task of %s: %v, %v", topic, tasks, err)
		}
		return repo.Complete(ctx, tx, topic, taskapi.Completion{Task: tasks[0], Decision: taskapi.Decision{Result: taskapi.Failure, Output: output}})
	})
}

// attemptLog writes attempts as taskproc's log of them.
func attemptLog(t *testing.T, attempts ...taskproc.Attempt) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"attempts": attempts})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := taskproc.Attempts(string(b)); !ok || len(got) != len(attempts) {
		t.Fatalf("taskproc does not read the log %s", b)
	}
	return string(b)
}

// TestServeShowsAttempts shows two tasks that taskproc retried: one FAILED
// after its attempts, one READY again and deferred to its next attempt.
// The task's page lists each attempt with the time it ended and its
// error (escaped), and says when the next attempt is due.
func TestServeShowsAttempts(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond})
	ctx := t.Context()
	pushN(t, d.store, "retries", 2)
	tasks := tasksOf(t, d.store, "retries")
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	exhausted := []taskproc.Attempt{
		{Number: 1, At: at, Error: "timeout after 30s"},
		{Number: 2, At: at.Add(2 * time.Minute), Error: `connection refused <script>alert("attempt")</script>`},
	}
	failWith(t, d.store, "worker", "retries", attemptLog(t, exhausted...))
	failWith(t, d.store, "worker", "retries", attemptLog(t, taskproc.Attempt{Number: 1, At: at.Add(time.Minute), Error: "card declined"}))
	again := []taskapi.Task{{Sequence: tasks[1].Sequence}}
	if _, err := d.store.ReviveTasks(ctx, "retries", taskapi.ReviveReset, again); err != nil {
		t.Fatal(err)
	}
	if err := d.store.Defer(ctx, "retries", time.Now().Add(10*time.Minute), again); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t, d.url)
	page := br.page(fmt.Sprintf("/task?topic=retries&seq=%d", tasks[0].Sequence))
	wantEscaped(t, "the page of a FAILED task", page)
	for _, want := range []string{"2 failed attempts", "timeout after 30s", `connection refused &lt;script&gt;alert(&#34;attempt&#34;)&lt;/script&gt;`,
		stampOf(exhausted[0].At), stampOf(exhausted[1].At)} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of the FAILED task does not say %q", want)
		}
	}
	info, _, err := d.store.Lookup(ctx, "retries", tasks[1].Sequence)
	if err != nil || info.State != taskapi.Ready || info.NotBefore.IsZero() {
		t.Fatalf("the retried task is %+v (%v), want READY and deferred", info, err)
	}
	page = br.page("/task?topic=" + url.QueryEscape("retries") + "&seq=" + fmt.Sprint(tasks[1].Sequence))
	for _, want := range []string{"1 failed attempt", "card declined", "the next attempt is due " + stampOf(info.NotBefore)} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of the retried task does not say %q", want)
		}
	}
}

// stampOf writes t as the dashboard's pages do.
func stampOf(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") + " UTC" }
