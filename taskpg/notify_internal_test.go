package taskpg

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// channelCases are the channel names of a few schemas; taskansi's tests
// hold its names to the same table.
var channelCases = []struct{ schema, tasks, due, activation string }{
	{"public", "taskrepo_tasks", "taskrepo_due", "taskrepo_activation"},
	{"billing", "taskrepo_tasks_billing", "taskrepo_due_billing", "taskrepo_activation_billing"},
	{`we"ird sch'ema`, `taskrepo_tasks_we"ird sch'ema`, `taskrepo_due_we"ird sch'ema`, `taskrepo_activation_we"ird sch'ema`},
	{strings.Repeat("s", 48), "taskrepo_tasks_" + strings.Repeat("s", 48), "taskrepo_due_" + strings.Repeat("s", 48), "taskrepo_activation_" + strings.Repeat("s", 34) + "_336b7155"},
	{strings.Repeat("s", 63), "taskrepo_tasks_" + strings.Repeat("s", 39) + "_142931f4", "taskrepo_due_" + strings.Repeat("s", 41) + "_142931f4", "taskrepo_activation_" + strings.Repeat("s", 34) + "_142931f4"},
	{strings.Repeat("é", 31), "taskrepo_tasks_" + strings.Repeat("é", 19) + "_fe591359", "taskrepo_due_" + strings.Repeat("é", 20) + "_fe591359", "taskrepo_activation_" + strings.Repeat("é", 17) + "_fe591359"},
}

func TestChannelNames(t *testing.T) {
	for _, c := range channelCases {
		if got := TasksChannel(c.schema); got != c.tasks {
			t.Errorf("TasksChannel(%q) = %q, want %q", c.schema, got, c.tasks)
		}
		if got := DueChannel(c.schema); got != c.due {
			t.Errorf("DueChannel(%q) = %q, want %q", c.schema, got, c.due)
		}
		if got := activationChannel(c.schema); got != c.activation {
			t.Errorf("activationChannel(%q) = %q, want %q", c.schema, got, c.activation)
		}
		for _, name := range []string{TasksChannel(c.schema), DueChannel(c.schema), activationChannel(c.schema)} {
			if len(name) > 63 || !utf8.ValidString(name) {
				t.Errorf("channel %q: %d bytes or invalid UTF-8", name, len(name))
			}
		}
	}
}

// Every notifying push statement notifies once, in its topic check: the
// channel of ready tasks or the one of deferred tasks.
func TestNotifyingStatements(t *testing.T) {
	r, err := New("o", WithSchema("s'x"))
	if err != nil {
		t.Fatal(err)
	}
	w := r.wake
	for channel, n := range map[string]*pushStatements{"taskrepo_tasks_s''x": w.statements(true, false), "taskrepo_due_s''x": w.statements(true, true)} {
		notify := "pg_notify('" + channel + "', topic)"
		for i, pair := range [][2]string{
			{w.plain.push[0], n.push[0]}, {w.plain.push[1], n.push[1]}, {w.plain.push[2], n.push[2]}, {w.plain.push[3], n.push[3]},
			{w.plain.pushOne, n.pushOne}, {w.plain.pushSequences, n.pushSequences}, {w.plain.pushOne, n.pushOneAlone},
		} {
			plain, notifying := pair[0], pair[1]
			if strings.Contains(plain, "pg_notify") || strings.Count(notifying, notify) != 1 {
				t.Errorf("%s, statement %d:\n%s\nnotifying:\n%s", channel, i, plain, notifying)
			}
			if got := strings.Replace(notifying, " AND "+notify+" IS NOT NULL", "", 1); got != plain {
				t.Errorf("%s, statement %d: the notifying one differs by more than the notification:\n%s", channel, i, notifying)
			}
		}
	}
	if w.statements(false, true) != &w.plain || w.statements(false, false) != &w.plain {
		t.Error("a push that does not notify has notifying statements")
	}
}

func TestClaimAndForget(t *testing.T) {
	r, err := New("o", WithWakeUps(time.Hour), WithQuietTopics("q"))
	if err != nil {
		t.Fatal(err)
	}
	w := r.wake
	first := w.Claim("t", false)
	if first == 0 || w.Claim("t", false) != 0 || w.Claim("q", false) != 0 || w.Claim("u", false) == 0 {
		t.Fatal("the first push of a topic notifies, the next ones and quiet topics do not")
	}
	due := w.Claim("t", true)
	if due == 0 || w.Claim("t", true) != 0 || w.Claim("q", true) != 0 {
		t.Fatal("the first push of deferred tasks of a topic notifies in an interval of its own, the next ones and quiet topics do not")
	}
	w.Forget("t", false, first)
	if w.Claim("t", false) == 0 || w.Claim("t", true) != 0 {
		t.Fatal("a forgotten claim leaves the interval to the next push, and only its own")
	}
	w.Forget("t", true, due)
	if w.Claim("t", true) == 0 {
		t.Fatal("a forgotten claim of deferred tasks leaves the interval to the next such push")
	}
	off, _ := New("o", WithoutWakeUps())
	always, _ := New("o", WithWakeUps(0))
	if off.wake.Claim("t", false) != 0 || always.wake.Claim("t", false) == 0 || always.wake.Claim("t", false) == 0 {
		t.Fatal("WithoutWakeUps never notifies, an interval of 0 always")
	}
	again, _ := New("o", WithoutWakeUps(), WithWakeUps(time.Second))
	if again.wake.Claim("t", false) == 0 {
		t.Fatal("WithWakeUps after WithoutWakeUps turns them on")
	}
	if _, err := New("o", WithWakeUps(-time.Second)); err == nil {
		t.Fatal("a negative interval is accepted")
	}
}
