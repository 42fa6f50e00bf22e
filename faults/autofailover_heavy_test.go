//go:build heavy

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

const (
	autoFailoverTopic   = "autofailover"
	autoFailoverPushers = 4
	autoFailoverWorkers = 3
	// autoFailoverRounds is how many rounds the test runs, a crash and a
	// switchover in turn; TASK_TEST_AUTOFAILOVER_ROUNDS sets another
	// number (CI's heavy step runs two).
	autoFailoverRounds = 10
	// autoFailoverExpiry is the consumer processes' expiry.
	autoFailoverExpiry = 5 * time.Second
)

// The environment of TestAutoFailoverLosesNothingCommitted.
const (
	autoFailoverRoundsEnv = "TASK_TEST_AUTOFAILOVER_ROUNDS"
	// autoFailoverSettingsEnv is "defaults" for pg_auto_failover's own
	// settings, else the tuned ones (testdb.AutoFailover.Settings).
	autoFailoverSettingsEnv = "TASK_TEST_AUTOFAILOVER_SETTINGS"
	// autoFailoverResultsEnv names the file that the test writes its
	// figures to (bench/results/autofailover_*.json).
	autoFailoverResultsEnv = "TASK_TEST_AUTOFAILOVER_RESULTS"
)

// The kinds of round.
const (
	crashRound      = "crash"      // the primary's host crashes; Recover after
	switchoverRound = "switchover" // pg_autoctl perform switchover
)

// TestAutoFailoverLosesNothingCommitted runs producers in the test and
// consumer processes (CompleteTx with an effect row) against a
// pg_auto_failover formation of two nodes, synchronous, through the
// multi-host URL with target_session_attrs=read-write, and breaks the
// primary round after round: a crash of its host (every process of its
// node killed; the monitor promotes the standby; the crashed node is then
// started again and rejoins as the standby), then a planned switchover,
// in turn. Every push whose commit returned is found, every task ends
// Succeeded with its effect committed once, and the consumer processes
// carry on without a restart. It logs, per round, how long after the kill
// or the switchover's start the first effect committed on the new
// primary, and writes those figures to the file that
// TASK_TEST_AUTOFAILOVER_RESULTS names. TASK_TEST_AUTOFAILOVER_SETTINGS=defaults
// runs pg_auto_failover with its defaults instead of the tuned settings.
func TestAutoFailoverLosesNothingCommitted(t *testing.T) {
	rounds := autoFailoverRounds
	if n, err := strconv.Atoi(os.Getenv(autoFailoverRoundsEnv)); err == nil && n > 0 {
		rounds = n
	}
	tuned := os.Getenv(autoFailoverSettingsEnv) != "defaults"
	ctx := context.Background()
	f := testdb.OwnAutoFailover(t, tuned)
	pool, repo := openFaultDB(t, f.URL(), autoFailoverTopic)
	// Which node committed each effect, to tell the new primary's apart.
	if _, err := pool.Exec(ctx, "ALTER TABLE fault_effect ADD COLUMN port int DEFAULT inet_server_port()"); err != nil {
		t.Fatal(err)
	}
	prod := startProducers(pool, repo, autoFailoverTopic, autoFailoverPushers)
	var workers []*worker
	for i := range autoFailoverWorkers {
		workers = append(workers, startWorker(t, f.URL(), autoFailoverTopic, fmt.Sprintf("autofailover-worker-%d", i),
			"-expiry", autoFailoverExpiry.String()))
	}
	resumes := map[string][]time.Duration{} // from the kill or the switchover's start
	gaps := map[string][]time.Duration{}    // from the last effect on the old primary
	for round := range rounds {
		kind := crashRound
		if round%2 == 1 {
			kind = switchoverRound
		}
		awaitEffects(t, pool, effectsNow(t, pool)+failoverFlow)
		old, err := f.PrimaryAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := f.Addrs()[0]
		if next == old {
			next = f.Addrs()[1]
		}
		at := time.Now()
		if kind == crashRound {
			err = f.Crash(ctx)
		} else {
			err = f.Switchover(ctx)
		}
		if err != nil {
			t.Fatalf("round %d (%s): %v", round, kind, err)
		}
		resume := awaitEffectOn(t, pool, next, at)
		resumes[kind] = append(resumes[kind], resume)
		gap := effectGap(t, pool, old, next, at)
		gaps[kind] = append(gaps[kind], gap)
		t.Logf("round %d (%s of %s): the first effect committed on %s %v after, %v after the last on %s",
			round, kind, old, next, resume.Round(time.Millisecond), gap.Round(time.Millisecond), old)
		if kind == crashRound {
			if err := f.Recover(ctx); err != nil {
				t.Fatalf("round %d: recover: %v", round, err)
			}
		}
	}
	prod.halt()
	total := awaitAllSucceeded(t, pool, repo, autoFailoverTopic)
	for _, w := range workers {
		w.stop(t) // the same processes: nobody restarted them
	}
	checkProducedOnce(t, ctx, pool, prod, total)
	recordAutoFailovers(t, pool, f, prod, rounds, resumes, gaps)
	settings := "tuned"
	if !tuned {
		settings = "defaults"
	}
	t.Logf("pg_auto_failover, settings %s: %d rounds, %d orders committed, %d pushes failed", settings, rounds, len(prod.committed), prod.failed)
	for _, kind := range []string{crashRound, switchoverRound} {
		if d := slices.Sorted(slices.Values(resumes[kind])); len(d) > 0 {
			t.Logf("%s: work resumed after %v (p50 %v, max %v)", kind, d, d[len(d)/2], d[len(d)-1])
		}
		if d := slices.Sorted(slices.Values(gaps[kind])); len(d) > 0 {
			t.Logf("%s: no effect committed for %v (p50 %v, max %v)", kind, d, d[len(d)/2], d[len(d)-1])
		}
	}
}

// awaitEffectOn waits until an effect inserted after at committed on the
// node at addr, and returns how long after at it saw it.
func awaitEffectOn(t *testing.T, pool *pgxpool.Pool, addr string, at time.Time) time.Duration {
	t.Helper()
	port := nodePort(t, addr)
	since := at.UTC()
	deadline := time.Now().Add(settleWithin)
	for {
		var found bool
		err := pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT FROM fault_effect WHERE port = $1 AND at > $2)", port, since).Scan(&found)
		if err == nil && found {
			return time.Since(at)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no effect committed on %s within %v (%v)", addr, settleWithin, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// effectGap returns the time between the last effect inserted on the node
// at old before at and the first inserted on the node at next after at,
// by the database's clock: how long no work committed. A switchover's
// old primary takes writes for a while after the switchover's start.
func effectGap(t *testing.T, pool *pgxpool.Pool, old, next string, at time.Time) time.Duration {
	t.Helper()
	var micros int64
	err := pool.QueryRow(context.Background(), `SELECT (extract(epoch FROM
		(SELECT min(at) FROM fault_effect WHERE port = $2 AND at > $3) - (SELECT max(at) FROM fault_effect WHERE port = $1)) * 1e6)::bigint`,
		nodePort(t, old), nodePort(t, next), at.UTC()).Scan(&micros)
	if err != nil {
		t.Fatalf("the time without effects: %v", err)
	}
	return time.Duration(micros) * time.Microsecond
}

// nodePort returns the port of the node at addr, host:port.
func nodePort(t *testing.T, addr string) int {
	t.Helper()
	_, portText, _ := strings.Cut(addr, ":")
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatalf("the port of %s: %v", addr, err)
	}
	return port
}

// recordAutoFailovers writes what the test measured to the file that
// TASK_TEST_AUTOFAILOVER_RESULTS names, if any, as recordFailovers does:
// the resume times of each kind of round (from the kill or the
// switchover's start) and its gaps (from the last effect on the old
// primary), in milliseconds, and the settings that differ from
// pg_auto_failover's defaults.
func recordAutoFailovers(t *testing.T, pool *pgxpool.Pool, f *testdb.AutoFailover, prod *producers, rounds int, resumes, gaps map[string][]time.Duration) {
	t.Helper()
	path := os.Getenv(autoFailoverResultsEnv)
	if path == "" {
		return
	}
	ctx := context.Background()
	var version, extension string
	if err := pool.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	monitor, err := pgxpool.New(ctx, f.MonitorURL())
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close()
	if err := monitor.QueryRow(ctx, "SELECT extversion FROM pg_extension WHERE extname = 'pgautofailover'").Scan(&extension); err != nil {
		t.Fatal(err)
	}
	ms := func(durations map[string][]time.Duration) map[string][]float64 {
		out := map[string][]float64{}
		for kind, ds := range durations {
			for _, d := range ds {
				out[kind] = append(out[kind], float64(d.Microseconds())/1000)
			}
		}
		return out
	}
	settings := "tuned"
	if !f.Tuned() {
		settings = "defaults"
	}
	// The machine may be shared: its load at the end says how busy.
	load, _ := os.ReadFile("/proc/loadavg")
	report := map[string]any{
		"date": time.Now().UTC().Format(time.RFC3339),
		"command": fmt.Sprintf("%s=%d %s=%s go test -tags heavy -run '^TestAutoFailoverLosesNothingCommitted$' ./faults",
			autoFailoverRoundsEnv, rounds, autoFailoverSettingsEnv, settings),
		"machine": map[string]any{"cpus": runtime.NumCPU(), "go": runtime.Version(), "postgresql": version, "pg_auto_failover": extension,
			"loadavg": strings.TrimSpace(string(load))},
		"figures": []any{},
		"autofailover": map[string]any{
			"settings": settings, "changed": f.Settings(), "synchronous": true,
			"producers": autoFailoverPushers, "consumers": autoFailoverWorkers, "expiry_ms": autoFailoverExpiry.Milliseconds(),
			"rounds": rounds, "pushes_committed": len(prod.committed), "pushes_failed": prod.failed,
			"resumes_ms": ms(resumes), "gaps_ms": ms(gaps),
		},
	}
	data, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
