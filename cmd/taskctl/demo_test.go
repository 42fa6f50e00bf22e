package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// demoTestTasks is the size of the demo runs of the tests: small enough to
// be quick, large enough that every topic shows each of its outcomes.
const demoTestTasks = 400

// demoTestArgs runs the demo at the tests' size, its producers pushing
// for a second.
var demoTestArgs = []string{"demo", "--tasks", "400", "--duration", "1s"}

// demoTopicNames are the demo's topics, as its documentation lists them.
var demoTopicNames = []string{"demo.orders", "demo.prices", "demo.pipeline", "demo.retries", "demo.later", "demo.paused"}

// demoReport is what the tests read of 'taskctl demo --json'.
type demoReport struct {
	Database   string  `json:"database"`
	Pushed     int64   `json:"pushed"`
	Completed  int64   `json:"completed"`
	Throughput float64 `json:"throughput_per_second"`
	Consumers  []struct {
		Owner     string `json:"owner"`
		Completed int64  `json:"completed"`
	} `json:"consumers"`
	Topics []struct {
		Topic   string           `json:"topic"`
		Pushed  int64            `json:"pushed"`
		Ran     int64            `json:"ran"`
		States  map[string]int64 `json:"states"`
		Results map[string]int64 `json:"results"`
	} `json:"topics"`
	Latency struct {
		Tasks int     `json:"tasks"`
		P50   float64 `json:"p50_ms"`
		P90   float64 `json:"p90_ms"`
		P99   float64 `json:"p99_ms"`
		Max   float64 `json:"max_ms"`
	} `json:"latency"`
	Retries struct {
		Tasks       int `json:"tasks"`
		MaxAttempts int `json:"max_attempts"`
		FirstTry    int `json:"first_try"`
		AfterRetry  int `json:"after_retry"`
		Exhausted   int `json:"exhausted"`
		Example     *struct {
			Sequence int64  `json:"sequence"`
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"example_exhausted"`
	} `json:"retries"`
	Deferred struct {
		Tasks int `json:"tasks"`
		Ran   int `json:"ran"`
		Early int `json:"early"`
	} `json:"deferred"`
	Paused struct {
		Tasks     int `json:"tasks"`
		Ran       int `json:"ran"`
		RanPaused int `json:"ran_while_paused"`
	} `json:"paused"`
	Recovered map[string]int64 `json:"recovered_failures"`
}

func TestDemoCreatesTheSQLiteFileAndSumsUp(t *testing.T) {
	dir := t.TempDir()
	out := taskctlIn(t, dir, "", "", demoTestArgs...)
	if out.code != 0 {
		t.Fatalf("taskctl demo: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "taskrepo.db")); err != nil {
		t.Errorf("taskctl demo left no taskrepo.db in the directory it ran in: %v", err)
	}
	wants := append([]string{
		"SUCCEEDED", "FAILED", "FILTERED", "SUSPENDED", "REDUNDANT", "SUCCESS", "FAILURE",
		"p50", "p90", "p99", "max", "tasks/s", "sqlite:taskrepo.db", "taskctl list -t demo.orders",
	}, demoTopicNames...)
	for _, want := range wants {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("the summary does not show %q:\n%s", want, out.stdout)
		}
	}
	if !strings.Contains(out.stderr, "demo: pushed 400 tasks") || !strings.Contains(out.stderr, "demo: every task settled") {
		t.Errorf("off a terminal the demo should write its milestones as plain lines; stderr:\n%s", out.stderr)
	}
	if strings.ContainsAny(out.stdout+out.stderr, "\r\x1b") {
		t.Errorf("off a terminal the demo drew a progress bar or colours:\n%q", out.stderr)
	}
}

func TestDemoStartsCleanWhenRunAgainInTheSameDirectory(t *testing.T) {
	dir := t.TempDir()
	first := demoJSON(t, dir, "")
	second := demoJSON(t, dir, "")
	checkDemoReport(t, first)
	checkDemoReport(t, second) // the counts would add up to twice the tasks had the topics not been reset
	if first.Consumers[0].Owner == second.Consumers[0].Owner {
		t.Errorf("two runs shared the consumer owner %q", first.Consumers[0].Owner)
	}
	var topics []struct {
		Topic      string `json:"topic"`
		Activation string `json:"activation"`
	}
	list := taskctlIn(t, dir, "", "", "topic", "list", "--json")
	if err := json.Unmarshal([]byte(list.stdout), &topics); err != nil {
		t.Fatalf("taskctl topic list --json after the demo: %v\n%s%s", err, list.stdout, list.stderr)
	}
	running := map[string]bool{}
	for _, topic := range topics {
		running[topic.Topic] = topic.Activation == "RUNNING"
	}
	for _, name := range demoTopicNames {
		if !running[name] {
			t.Errorf("after the demo, topic %s should stay and run; topic list: %+v", name, topics)
		}
	}
}

func TestDemoRunsOnPostgreSQL(t *testing.T) {
	r := demoJSON(t, t.TempDir(), postgresURL(t))
	if !strings.HasPrefix(r.Database, "postgres") {
		t.Errorf("the demo ran on %q, not on PostgreSQL", r.Database)
	}
	checkDemoReport(t, r)
}

// TestDemoThroughPgBouncer runs the demo through a PgBouncer in
// transaction mode (issue 26) with --listen-url straight to the server:
// every task settles and no consumer's Notifier is lost. (Without a listen
// URL, a Notifier says it hears nothing after its first silent ping
// interval, five seconds, longer than this run: taskpg's and
// integration_test's PgBouncer tests prove that.)
func TestDemoThroughPgBouncer(t *testing.T) {
	direct := postgresURL(t)
	r := demoJSON(t, t.TempDir(), testdb.PgBouncerURL(t, direct), "--listen-url", direct)
	checkDemoReport(t, r)
	if n := r.Recovered["notifier lost"]; n != 0 {
		t.Errorf("with --listen-url, %d Notifiers were lost: %v", n, r.Recovered)
	}
}

func TestDemoRunsOnMySQL(t *testing.T) {
	r := demoJSON(t, t.TempDir(), mysqlURL(t))
	if !strings.HasPrefix(r.Database, "mysql://") {
		t.Errorf("the demo ran on %q, not on MySQL", r.Database)
	}
	checkDemoReport(t, r)
}

func TestDemoRefusesBadFlags(t *testing.T) {
	wantExit(t, "", exitUsage, "--tasks", "demo", "--tasks", "3")
	wantExit(t, "", exitUsage, "--consumers", "demo", "--consumers", "0")
	wantExit(t, "", exitUsage, "--timeout", "demo", "--timeout", "0s")
	wantExit(t, "", exitUsage, "unknown flag", "demo", "--no-such-flag")
	wantExit(t, "", exitUsage, "--listen-url is for PostgreSQL", "demo", "--listen-url", "postgres://localhost/x")
	wantExit(t, postgresURL(t), exitUsage, "bad --listen-url", "demo", "--listen-url", "postgres://%zz")
}

func TestDemoDrawsABarOnATerminal(t *testing.T) {
	cmd := exec.Command(binary, "demo", "--tasks", "200", "--duration", "1s")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TASKREPO_DATABASE_URL=", "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("start taskctl demo on a terminal: %v", err)
	}
	defer f.Close()
	stuck := time.AfterFunc(commandPatience, func() { _ = cmd.Process.Kill() })
	defer stuck.Stop()
	var seen bytes.Buffer
	_, _ = io.Copy(&seen, f) // ends when taskctl exits and the terminal closes
	if err := cmd.Wait(); err != nil {
		t.Fatalf("taskctl demo on a terminal: %v\n%s", err, seen.String())
	}
	for _, want := range []string{"█", "settled", "demo: every task settled", "Tasks by state", "demo.paused"} {
		if !strings.Contains(seen.String(), want) {
			t.Errorf("on a terminal the demo should show %q:\n%s", want, seen.String())
		}
	}
}

// demoJSON runs the demo with --json in dir on database (empty: the
// SQLite file of dir) and decodes what it prints.
func demoJSON(t *testing.T, dir, database string, args ...string) demoReport {
	t.Helper()
	out := taskctlIn(t, dir, database, "", append(append(demoTestArgs, "--json"), args...)...)
	if out.code != 0 {
		t.Fatalf("taskctl demo --json: exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	var r demoReport
	if err := json.Unmarshal([]byte(out.stdout), &r); err != nil {
		t.Fatalf("taskctl demo --json printed no JSON: %v\n%s", err, out.stdout)
	}
	return r
}

// checkDemoReport checks what a user would check of a run: every pushed
// task is accounted for exactly once and settled, and each topic shows
// what it is there for.
func checkDemoReport(t *testing.T, r demoReport) {
	t.Helper()
	if r.Pushed != demoTestTasks {
		t.Errorf("pushed %d tasks, want %d", r.Pushed, demoTestTasks)
	}
	if len(r.Consumers) != 3 || r.Consumers[0].Owner == r.Consumers[1].Owner {
		t.Errorf("want 3 consumers, each its own owner; got %+v", r.Consumers)
	}
	var pushed, completed int64
	for i, topic := range r.Topics {
		if i >= len(demoTopicNames) || topic.Topic != demoTopicNames[i] {
			t.Errorf("topic %d is %q; want the topics %q in order", i, topic.Topic, demoTopicNames)
		}
		pushed += topic.Pushed
		completed += checkDemoTopic(t, topic.Topic, topic.Pushed, topic.Ran, topic.States, topic.Results)
	}
	if pushed != demoTestTasks || len(r.Topics) != len(demoTopicNames) {
		t.Errorf("the topics' pushes add up to %d in %d topics; want %d in %d", pushed, len(r.Topics), demoTestTasks, len(demoTopicNames))
	}
	if r.Completed != completed || r.Throughput <= 0 {
		t.Errorf("completed %d at %.1f tasks/s; the topics hold %d completed tasks", r.Completed, r.Throughput, completed)
	}
	l := r.Latency
	if l.Tasks == 0 || l.P50 < 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency percentiles out of order or missing: %+v", l)
	}
	checkDemoRetries(t, r)
	if d := r.Deferred; d.Tasks == 0 || d.Ran != d.Tasks || d.Early != 0 {
		t.Errorf("deferred batch: %+v; want every task run, none before its NotBefore", d)
	}
	if p := r.Paused; p.Tasks == 0 || p.Ran != p.Tasks || p.RanPaused != 0 {
		t.Errorf("paused topic: %+v; want every task run, none while the topic was paused", p)
	}
}

// checkDemoTopic checks one topic's counts and returns how many of its
// tasks completed.
func checkDemoTopic(t *testing.T, topic string, pushed, ran int64, states, results map[string]int64) int64 {
	t.Helper()
	var all, byResult int64
	for _, n := range states {
		all += n
	}
	for _, n := range results {
		byResult += n
	}
	completed := states["FAILED"] + states["SUSPENDED"] + states["FILTERED"] + states["SUCCEEDED"]
	if all != pushed || pushed == 0 {
		t.Errorf("%s: %d tasks pushed, the states %v add up to %d", topic, pushed, states, all)
	}
	if open := states["READY"] + states["ACTIVE"] + states["EXPIRED"]; open != 0 {
		t.Errorf("%s: %d tasks left unsettled: %v", topic, open, states)
	}
	if byResult != completed {
		t.Errorf("%s: results %v add up to %d, completed states %d", topic, results, byResult, completed)
	}
	switch topic {
	case "demo.prices":
		if states["REDUNDANT"] == 0 || completed == 0 {
			t.Errorf("%s: the Replace stream should leave REDUNDANT and completed tasks: %v", topic, states)
		}
	case "demo.orders", "demo.pipeline":
		for _, s := range []string{"SUCCEEDED", "FAILED", "FILTERED", "SUSPENDED"} {
			if states[s] == 0 {
				t.Errorf("%s: want a mix of results, no %s: %v", topic, s, states)
			}
		}
		fallthrough
	default:
		if ran != pushed || states["REDUNDANT"] != 0 {
			t.Errorf("%s: %d of %d tasks ran, states %v", topic, ran, pushed, states)
		}
	}
	return completed
}

// checkDemoRetries checks that some tasks succeeded on a retry and some
// ran out of attempts, and that the database agrees.
func checkDemoRetries(t *testing.T, r demoReport) {
	t.Helper()
	rt := r.Retries
	if rt.AfterRetry == 0 || rt.Exhausted == 0 || rt.FirstTry+rt.AfterRetry+rt.Exhausted != rt.Tasks {
		t.Errorf("retries: %+v; want some succeeding after a retry, some exhausted, every task one or the other or at once", rt)
	}
	for _, topic := range r.Topics {
		if topic.Topic == "demo.retries" && topic.States["FAILED"] != int64(rt.Exhausted) {
			t.Errorf("demo.retries holds %d FAILED tasks; %d ran out of attempts", topic.States["FAILED"], rt.Exhausted)
		}
	}
	if ex := rt.Example; ex == nil || ex.State != "FAILED" || ex.Attempts != rt.MaxAttempts || rt.MaxAttempts < 2 {
		t.Errorf("an exhausted task should be FAILED with every attempt in its log: %+v (max %d)", ex, rt.MaxAttempts)
	}
}
