package taskansi

import (
	"strings"
	"testing"
	"time"
)

// TestChannelNames holds the names to taskpg's table (taskpg's
// TestChannelNames), so that taskpg's Notifier hears taskansi's pushes.
func TestChannelNames(t *testing.T) {
	for _, c := range []struct{ schema, tasks string }{
		{"public", "taskrepo_tasks"},
		{"", "taskrepo_tasks"},
		{"billing", "taskrepo_tasks_billing"},
		{`we"ird sch'ema`, `taskrepo_tasks_we"ird sch'ema`},
		{strings.Repeat("s", 48), "taskrepo_tasks_" + strings.Repeat("s", 48)},
		{strings.Repeat("s", 63), "taskrepo_tasks_" + strings.Repeat("s", 39) + "_142931f4"},
		{strings.Repeat("é", 31), "taskrepo_tasks_" + strings.Repeat("é", 19) + "_fe591359"},
	} {
		if got := tasksChannel(c.schema); got != c.tasks {
			t.Errorf("tasksChannel(%q) = %q, want %q", c.schema, got, c.tasks)
		}
	}
}

// On PostgreSQL the statement that locks a push's topic notifies; the
// other dialects never notify.
func TestNotifyingTopicStatement(t *testing.T) {
	r, err := New(Postgres, "o", WithSchema("s'x"))
	if err != nil {
		t.Fatal(err)
	}
	w := r.wake
	notification := " AND pg_notify('taskrepo_tasks_s''x', topic) IS NOT NULL"
	if got := strings.Replace(w.topicStatement(true), notification, "", 1); got != w.topicStatement(false) || got == w.topicStatement(true) {
		t.Fatalf("notifying statement:\n%s\nplain:\n%s", w.topicStatement(true), w.topicStatement(false))
	}
	for _, d := range []Dialect{SQLite, MySQL} {
		r, err := New(d, "o", WithWakeUps(0))
		if err != nil {
			t.Fatal(err)
		}
		if r.wake.Claim("t") != 0 {
			t.Errorf("%v notifies", d)
		}
	}
}

func TestClaimAndForget(t *testing.T) {
	r, err := New(Postgres, "o", WithWakeUps(time.Hour), WithQuietTopics("q"))
	if err != nil {
		t.Fatal(err)
	}
	w := r.wake
	first := w.Claim("t")
	if first == 0 || w.Claim("t") != 0 || w.Claim("q") != 0 || w.Claim("u") == 0 {
		t.Fatal("the first push of a topic notifies, the next ones and quiet topics do not")
	}
	w.Forget("t", first)
	if w.Claim("t") == 0 {
		t.Fatal("a forgotten claim leaves the interval to the next push")
	}
	off, _ := New(Postgres, "o", WithoutWakeUps())
	always, _ := New(Postgres, "o", WithWakeUps(0))
	if off.wake.Claim("t") != 0 || always.wake.Claim("t") == 0 || always.wake.Claim("t") == 0 {
		t.Fatal("WithoutWakeUps never notifies, an interval of 0 always")
	}
	if _, err := New(Postgres, "o", WithWakeUps(-time.Second)); err == nil {
		t.Fatal("a negative interval is accepted")
	}
}
