package taskansi

import (
	"strings"
	"testing"
	"time"
)

// On PostgreSQL the statement that locks a push's topic notifies; the
// other dialects never notify.
func TestNotifyingTopicStatement(t *testing.T) {
	r, err := New(Postgres, "o", WithSchema("s'x"))
	if err != nil {
		t.Fatal(err)
	}
	w := r.wake
	for channel, deferred := range map[string]bool{"taskrepo_tasks_s''x": false, "taskrepo_due_s''x": true} {
		notification := " AND pg_notify('" + channel + "', topic) IS NOT NULL"
		notifying := w.topicStatement(true, deferred)
		if got := strings.Replace(notifying, notification, "", 1); got != w.topicStatement(false, deferred) || got == notifying {
			t.Fatalf("notifying statement:\n%s\nplain:\n%s", notifying, w.topicStatement(false, deferred))
		}
	}
	for _, d := range []Dialect{SQLite, MySQL} {
		r, err := New(d, "o", WithWakeUps(0))
		if err != nil {
			t.Fatal(err)
		}
		if r.wake.Claim("t", false) != 0 {
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
	first := w.Claim("t", false)
	if first == 0 || w.Claim("t", false) != 0 || w.Claim("q", false) != 0 || w.Claim("u", false) == 0 {
		t.Fatal("the first push of a topic notifies, the next ones and quiet topics do not")
	}
	w.Forget("t", false, first)
	if w.Claim("t", false) == 0 {
		t.Fatal("a forgotten claim leaves the interval to the next push")
	}
	off, _ := New(Postgres, "o", WithoutWakeUps())
	always, _ := New(Postgres, "o", WithWakeUps(0))
	if off.wake.Claim("t", false) != 0 || always.wake.Claim("t", false) == 0 || always.wake.Claim("t", false) == 0 {
		t.Fatal("WithoutWakeUps never notifies, an interval of 0 always")
	}
	if _, err := New(Postgres, "o", WithWakeUps(-time.Second)); err == nil {
		t.Fatal("a negative interval is accepted")
	}
}
