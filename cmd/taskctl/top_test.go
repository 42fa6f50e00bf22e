package main

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// topColumns are the columns of top's table.
var topColumns = []string{
	"TOPIC", "ACTIVATION", "READY", "ACTIVE", "EXPIRED", "FAILED", "SUSPENDED", "SUCCEEDED", "CANCELLED", "OTHER",
	"DONE/S", "PUSHED/S", "WAIT",
}

// topWorker is the consumer that topSeed polls and completes as.
const topWorker = "worker-1"

// topSeed makes three topics on the database and fills two of them with
// taskctl, polling and completing as topWorker would; beta is paused. What
// it leaves:
//
//	alpha RUNNING: READY 2 (one deferred by an hour), ACTIVE 1, FAILED 1, SUCCEEDED 1
//	beta  PAUSED:  READY 2, SUSPENDED 2 (one pushed suspended), FILTERED 1
//	idle  RUNNING: no task
func topSeed(t *testing.T, database string) {
	t.Helper()
	must(t, database, "topic", "init", "alpha", "beta", "idle")
	must(t, database, "push", "-t", "alpha", "a1", "a2", "a3", "a4")
	must(t, database, "push", "-t", "alpha", "--not-before", "+1h", "a5")
	must(t, database, "push", "-t", "beta", "b1", "b2", "b3", "b4")
	must(t, database, "push", "-t", "beta", "--suspended", "b5")
	settle(t, database, topWorker, "alpha", 1, taskapi.Success)
	settle(t, database, topWorker, "alpha", 1, taskapi.Failure)
	settle(t, database, topWorker, "beta", 1, taskapi.Suspension)
	settle(t, database, topWorker, "beta", 1, taskapi.Filter)
	// Last: each settle registers topWorker anew, which expires the
	// tasks the name held before.
	hold(t, database, topWorker, "alpha", 1)
	must(t, database, "topic", "pause", "beta")
}

// topWantRows are the first ten cells of the rows topSeed leaves: topic,
// activation and the counts of READY to OTHER.
var topWantRows = map[string][]string{
	"alpha": {"alpha", "RUNNING", "2", "1", "0", "1", "0", "1", "0", "0"},
	"beta":  {"beta", "PAUSED", "2", "0", "0", "0", "2", "0", "0", "1"},
	"idle":  {"idle", "RUNNING", "0", "0", "0", "0", "0", "0", "0", "0"},
}

// TestTopDrawsOnATerminalAndQuits runs top on a pseudo-terminal: it draws
// every topic, and q, ctrl+c and SIGINT end it with exit 0 and the screen
// restored.
func TestTopDrawsOnATerminalAndQuits(t *testing.T) {
	t.Parallel()
	database := sqliteURL(t)
	topSeed(t, database)
	quits := []struct {
		name string
		quit func(t *testing.T, term *terminal)
	}{
		{"q", func(_ *testing.T, term *terminal) { term.send("q") }},
		{"ctrl+c key", func(_ *testing.T, term *terminal) { term.send("\x03") }},
		{"SIGINT", func(t *testing.T, term *terminal) {
			if err := term.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatalf("send SIGINT: %v", err)
			}
		}},
	}
	for _, q := range quits {
		t.Run(q.name, func(t *testing.T) {
			term := onTerminal(t, database, "top", "--interval", "200ms", "--within", "1h")
			term.expectWords(topScreenWants()...)
			q.quit(t, term)
			if code := term.wait(); code != 0 {
				t.Errorf("top exited %d after %s, want 0; it showed:\n%s", code, q.name, term.text())
			}
			if !strings.Contains(term.raw(), "\x1b[?1049l") {
				t.Errorf("top left the alternate screen on: the user's screen did not come back")
			}
		})
	}
}

// topScreenWants is what the live view of topSeed's database shows, as
// words in order once the escape sequences are gone.
func topScreenWants() []string {
	wants := []string{"TOPIC ACTIVATION READY ACTIVE EXPIRED FAILED SUSPENDED SUCCEEDED CANCELLED OTHER DONE/S PUSHED/S WAIT"}
	for _, topic := range []string{"alpha", "beta", "idle"} {
		wants = append(wants, strings.Join(topWantRows[topic], " "))
	}
	return append(wants, "owners alive (heartbeat within 1h): 1: "+topWorker, "q to quit")
}

// TestTopPrintsOneReadingWithoutATerminal checks the table that top prints
// once when its output is not a terminal, and with --once.
func TestTopPrintsOneReadingWithoutATerminal(t *testing.T) {
	t.Parallel()
	for _, db := range backends(false) {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			database := db.url(t)
			topSeed(t, database)
			for _, args := range [][]string{{"top"}, {"top", "--once"}} {
				out := must(t, database, append(args, "--within", "1h", "--window", "1h")...)
				checkTopTable(t, out)
			}
		})
	}
}

// checkTopTable checks the table that top printed for topSeed's database.
func checkTopTable(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("top printed %d lines, want the column names, 3 topics and the owners:\n%s", len(lines), out)
	}
	if got := strings.Fields(lines[0]); !slices.Equal(got, topColumns) {
		t.Errorf("columns %q, want %q", got, topColumns)
	}
	for i, topic := range []string{"alpha", "beta", "idle"} {
		cells := strings.Fields(lines[i+1])
		if len(cells) != len(topColumns) || !slices.Equal(cells[:10], topWantRows[topic]) {
			t.Errorf("row of %s: %q, want it to begin %q", topic, cells, topWantRows[topic])
			continue
		}
		if wait := cells[12]; (topic == "idle") != (wait == "-") {
			t.Errorf("WAIT of %s: %q", topic, wait)
		}
	}
	if want := "owners alive (heartbeat within 1h): 1: " + topWorker; lines[4] != want {
		t.Errorf("owners line %q, want %q", lines[4], want)
	}
}

// topReading is the JSON that top --json prints.
type topReading struct {
	At            time.Time `json:"at"`
	WindowSeconds float64   `json:"window_seconds"`
	WithinSeconds float64   `json:"within_seconds"`
	Topics        []struct {
		Topic              string           `json:"topic"`
		Activation         string           `json:"activation"`
		States             map[string]int64 `json:"states"`
		Done               int64            `json:"done"`
		Pushed             int64            `json:"pushed"`
		DonePerSecond      float64          `json:"done_per_second"`
		PushedPerSecond    float64          `json:"pushed_per_second"`
		OldestReadySeconds *float64         `json:"oldest_ready_seconds"`
	} `json:"topics"`
	Owners []string `json:"owners"`
}

// TestTopPrintsJSON checks what top --json prints.
func TestTopPrintsJSON(t *testing.T) {
	t.Parallel()
	for _, db := range backends(false) {
		t.Run(db.name, func(t *testing.T) {
			t.Parallel()
			database := db.url(t)
			topSeed(t, database)
			got := decode[topReading](t, must(t, database, "top", "--json", "--within", "1h", "--window", "1h"))
			if time.Since(got.At) > time.Hour || got.WindowSeconds != 3600 || got.WithinSeconds != 3600 {
				t.Errorf("at %s, window %vs, within %vs: want now, 3600 and 3600", got.At, got.WindowSeconds, got.WithinSeconds)
			}
			if !slices.Equal(got.Owners, []string{topWorker}) {
				t.Errorf("owners %q, want [%s]", got.Owners, topWorker)
			}
			checkTopJSONTopics(t, got)
		})
	}
}

// checkTopJSONTopics checks the topics of top --json on topSeed's database.
func checkTopJSONTopics(t *testing.T, got topReading) {
	t.Helper()
	want := []struct {
		topic, activation string
		ready, suspended  int64
		done, pushed      int64
		waiting           bool
	}{
		{"alpha", "RUNNING", 2, 0, 2, 5, true},
		{"beta", "PAUSED", 2, 2, 2, 5, true},
		{"idle", "RUNNING", 0, 0, 0, 0, false},
	}
	if len(got.Topics) != len(want) {
		t.Fatalf("%d topics, want %d: %+v", len(got.Topics), len(want), got.Topics)
	}
	for i, w := range want {
		g := got.Topics[i]
		if g.Topic != w.topic || g.Activation != w.activation || g.States["READY"] != w.ready ||
			g.States["SUSPENDED"] != w.suspended || len(g.States) != 10 || g.Done != w.done || g.Pushed != w.pushed {
			t.Errorf("topic %d: %+v, want %+v with all ten states", i, g, w)
		}
		if g.DonePerSecond != float64(w.done)/3600 || g.PushedPerSecond != float64(w.pushed)/3600 {
			t.Errorf("%s: done/s %v, pushed/s %v; want %v and %v", w.topic, g.DonePerSecond, g.PushedPerSecond, float64(w.done)/3600, float64(w.pushed)/3600)
		}
		if waiting := g.OldestReadySeconds != nil && *g.OldestReadySeconds > 0; waiting != w.waiting {
			t.Errorf("%s: oldest_ready_seconds %v, want a wait: %v", w.topic, g.OldestReadySeconds, w.waiting)
		}
	}
}

// TestTopRefusesBadFlags checks that bad durations are usage errors that
// name their flag.
func TestTopRefusesBadFlags(t *testing.T) {
	t.Parallel()
	wantExit(t, "", exitUsage, "--interval", "top", "--interval", "50ms")
	wantExit(t, "", exitUsage, "--interval", "top", "--interval", "soon")
	wantExit(t, "", exitUsage, "--window", "top", "--window", "0s")
	wantExit(t, "", exitUsage, "--within", "top", "--within", "-1s")
}
