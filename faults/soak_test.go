//go:build soak

package faults

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// The soak's settings: go test -tags soak ./faults -run TestSoak -soak.duration 10m.
var (
	soakDuration  = flag.Duration("soak.duration", time.Minute, "how long the soak injects faults")
	soakProducers = flag.Int("soak.producers", 3, "producers, each pushing orders in transactions of its own")
	soakConsumers = flag.Int("soak.consumers", 3, "consumer processes")
	soakEvery     = flag.Duration("soak.check", 3*time.Second, "how often the invariants are checked")
	soakTopology  = flag.String("soak.topology", "direct", "how producers and consumers reach PostgreSQL: "+
		"direct (through a proxy that cuts), pgbouncer (through that proxy and a PgBouncer in transaction mode, restarted among the faults) "+
		"failover (a primary and its synchronous standby by a multi-host URL, failed over among the faults) "+
		"or autofailover (the same under pg_auto_failover, tuned: the primary's host crashed, or switched over, among the faults)")
)

const (
	soakTopic  = "soak"
	soakExpiry = 2 * time.Second
	soakWork   = 30 * time.Millisecond
	// soakStartTries bounds the starts of one worker that the database's
	// unavailability refused (see startWorker).
	soakStartTries = 10
)

// soak is one soak run: its database, reached directly by the test and
// through a proxy by producers and consumers, and what it has seen.
type soak struct {
	t         *testing.T
	cluster   *testdb.Cluster      // the database, but in the topology failover
	bouncer   *testdb.Cluster      // the PgBouncer of the topology pgbouncer
	pair      *testdb.Replicated   // the primary and standby of the topology failover
	auto      *testdb.AutoFailover // the formation of the topology autofailover
	listen    string               // the consumers' Notifiers' own URL (pgbouncer)
	direct    *pgxpool.Pool
	repo      *taskpg.Repository
	proxy     *netproxy.Proxy // nil in the topology failover, which cuts no connection
	proxied   string
	producers *producers
	restarted time.Time // the last restart or failover, by the goroutine that injects faults
	// bouncerRestarted is the last restart of PgBouncer, by that goroutine.
	bouncerRestarted time.Time

	mu       sync.Mutex
	workers  map[string]*worker
	next     int               // the number of the next worker
	faults   map[string]int    // faults injected, by kind
	kills    []*kill           // crashes, with when their work resumed
	timeline []injected        // every fault injected, in order
	waiting  map[*kill][]int64 // of the kills whose work has not resumed yet, the tasks not yet resumed
	checks   int               // invariant checks made
	wrong    map[string]int    // instances of broken invariants seen, by invariant
}

// TestSoak runs producers and consumer processes on one topic for
// -soak.duration while faults of every kind are injected at random:
// consumers killed with SIGKILL, connections cut, the topic paused and
// drained, failed and suspended tasks revived, finished tasks purged,
// ready tasks deferred, the database restarted, and, as -soak.topology
// has them, PgBouncer restarted or the primary failed over; and the consumers
// themselves retry, snooze, fail and suspend tasks. Every -soak.check the
// invariants are checked (soak_check_test.go); at the end, once the faults
// stop and the queue drains, every committed task has its one final
// result. The figures are logged: run with -v.
func TestSoak(t *testing.T) {
	s := startSoak(t)
	deadline := time.Now().Add(*soakDuration)
	stopCheck := s.every(*soakEvery, func() { s.check(false) })
	stopWatch := s.every(50*time.Millisecond, s.watchResumes)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(300+rand.IntN(600)) * time.Millisecond)
		s.inject()
	}
	if s.proxy != nil {
		s.proxy.Restore()
	}
	s.producers.halt()
	s.drain()
	stopWatch()
	stopCheck()
	s.check(true)
	s.stopWorkers()
	s.report()
	if kind := map[string]string{"pgbouncer": "pgbouncer restart", "failover": "failover", "autofailover": "failover"}[*soakTopology]; kind != "" && s.faults[kind] == 0 {
		t.Errorf("the soak of the topology %s injected no %s: it proved nothing of it", *soakTopology, kind)
	}
}

// startSoak starts the database of the soak, its proxy, producers and
// consumers.
func startSoak(t *testing.T) *soak {
	s := &soak{t: t, workers: map[string]*worker{}, faults: map[string]int{}, wrong: map[string]int{}, waiting: map[*kill][]int64{}}
	s.proxied = s.startDatabase()
	for range *soakConsumers {
		s.startWorker()
	}
	s.producers = &producers{committed: map[string]bool{}, stop: make(chan struct{}), orders: soakOrders, pace: 10 * time.Millisecond}
	s.producers.start(pool(t, s.proxied), s.repo, soakTopic, *soakProducers)
	return s
}

// startDatabase starts the database of the soak's topology, opens the
// test's own pool on it, and returns the URL of producers and consumers.
func (s *soak) startDatabase() string {
	var direct, target string
	switch *soakTopology {
	case "direct":
		s.cluster = testdb.OwnPostgres(s.t)
		direct, target = s.cluster.URL(), s.cluster.URL()
	case "pgbouncer":
		s.cluster = testdb.OwnPostgres(s.t)
		s.bouncer = testdb.OwnPgBouncer(s.t, s.cluster)
		direct, target, s.listen = s.cluster.URL(), s.bouncer.URL(), s.cluster.URL()
	case "failover":
		s.pair = testdb.OwnReplicated(s.t, true)
		s.direct, s.repo = openFaultDB(s.t, s.pair.URL(), soakTopic)
		return s.pair.URL()
	case "autofailover":
		s.auto = testdb.OwnAutoFailover(s.t, true)
		s.direct, s.repo = openFaultDB(s.t, s.auto.URL(), soakTopic)
		return s.auto.URL()
	default:
		s.t.Fatalf("-soak.topology %q: want direct, pgbouncer, failover or autofailover", *soakTopology)
	}
	s.direct, s.repo = openFaultDB(s.t, direct, soakTopic)
	proxy, proxied, err := netproxy.ForURL(target)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { proxy.Close() })
	s.proxy = proxy
	return proxied
}

// soakFates are the inputs of the soak's tasks, each asking its consumer
// for a decision (faults/worker/soak.go), weighted by how often they come.
var soakFates = []string{
	"success", "success", "success", "success", "success", "success",
	"filter", "suspend", "fail", "flaky", "flaky", "sleepy",
}

// soakOrders are one transaction's orders: one to five tasks with random
// fates, a few of them due up to two seconds later.
func soakOrders(producer, i int) []taskapi.Creation {
	creations := make([]taskapi.Creation, 1+rand.IntN(5))
	for j := range creations {
		creations[j] = taskapi.Creation{
			Identifier: fmt.Sprintf("order-%d-%d-%d", producer, i, j),
			Input:      soakFates[rand.IntN(len(soakFates))],
		}
		if rand.IntN(10) == 0 {
			creations[j].NotBefore = time.Now().Add(time.Duration(rand.IntN(2000)) * time.Millisecond)
		}
	}
	return creations
}

// startWorker starts one more consumer process, through the proxy. A
// worker that exits because the database is unavailable at its start (a
// restart of PostgreSQL under way, or PgBouncer refusing logins for
// server_login_retry after one) is started again a second later, as a
// supervisor does, up to soakStartTries times.
func (s *soak) startWorker() {
	s.mu.Lock()
	owner := fmt.Sprintf("soak-worker-%d", s.next)
	s.next++
	s.mu.Unlock()
	var w *worker
	for try := 1; ; try++ {
		var err error
		w, err = launchWorker(s.t, s.proxied, soakTopic, owner, "-mix", "soak", "-expiry", soakExpiry.String(), "-work", soakWork.String(), "-listen", s.listen)
		if err == nil {
			break
		}
		if !errors.Is(err, errWorkerTempFail) || try == soakStartTries*s.startPatience() {
			s.t.Fatal(err)
		}
		s.t.Logf("%v; starting it again", err)
		time.Sleep(time.Second)
	}
	s.mu.Lock()
	s.workers[owner] = w
	s.mu.Unlock()
}

// startPatience multiplies soakStartTries: a crash under pg_auto_failover
// leaves no primary for some ten seconds, tuned.
func (s *soak) startPatience() int {
	if s.auto != nil {
		return 4
	}
	return 1
}

// every runs fn every interval in a goroutine of its own until the
// returned function is called; that function returns once fn has.
func (s *soak) every(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				fn()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// drain waits until no task is left to run: none Ready, Active or Expired.
func (s *soak) drain() {
	ctx := context.Background()
	deadline := time.Now().Add(settleWithin)
	for {
		counts, err := s.repo.Count(ctx, s.direct, taskapi.Total, taskapi.Counting{Topic: soakTopic,
			States: []taskapi.State{taskapi.Active, taskapi.Ready, taskapi.Expired}}, taskapi.Unbounded)
		if err == nil && len(counts[soakTopic]) == 0 {
			return
		}
		if time.Now().After(deadline) {
			active, _ := s.repo.Page(ctx, s.direct, soakTopic, taskapi.Listing{States: []taskapi.State{taskapi.Active}}, taskapi.Inception, 3, taskapi.Forward)
			for _, info := range active {
				s.t.Logf("task %d Active under %s", info.Sequence, info.Owner)
			}
			s.t.Fatalf("the queue did not drain within %v after the faults stopped: %v (%v)", settleWithin, counts[soakTopic], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopWorkers stops every live consumer cleanly.
func (s *soak) stopWorkers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.stop(s.t)
	}
}

// report logs what the soak did: tasks pushed and runs, faults by kind,
// checks and violations, and how long a crashed process's work took to
// resume elsewhere.
func (s *soak) report() {
	ctx := context.Background()
	var orders, runs, purged int64
	err := s.direct.QueryRow(ctx, `SELECT (SELECT count(*) FROM fault_order), (SELECT count(*) FROM fault_effect),
		(SELECT count(*) FROM fault_purged)`).Scan(&orders, &runs, &purged)
	if err != nil {
		s.t.Fatal(err)
	}
	counts, err := s.repo.Count(ctx, s.direct, taskapi.Total, taskapi.Counting{Topic: soakTopic}, taskapi.Unbounded)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("soak of %v (topology %s): %d tasks pushed in committed transactions (%d pushes failed), %d runs recorded, %d tasks purged; left: %v",
		*soakDuration, *soakTopology, orders, s.producers.failed, runs, purged, counts[soakTopic])
	for _, kind := range slices.Sorted(maps.Keys(s.faults)) {
		s.t.Logf("  fault %-16s %5d", kind, s.faults[kind])
	}
	violations := 0
	for _, n := range s.wrong {
		violations += n
	}
	s.t.Logf("%d invariant checks, %d violations", s.checks, violations)
	var resumes []time.Duration
	for _, k := range s.kills {
		if len(k.held) > 0 && k.resumed > 0 {
			resumes = append(resumes, k.resumed)
		}
	}
	if len(resumes) == 0 {
		s.t.Logf("no crash caught a consumer holding tasks")
		return
	}
	s.logSlowResumes()
	slices.Sort(resumes)
	s.t.Logf("a crashed consumer's work resumed elsewhere after p50 %v, p99 %v, max %v (%d crashes with tasks held; expiry %v)",
		percentile(resumes, 50), percentile(resumes, 99), resumes[len(resumes)-1].Round(time.Millisecond), len(resumes), soakExpiry)
}

// percentile returns the pth percentile of sorted durations, rounded.
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)].Round(time.Millisecond)
}

// logSlowResumes logs each crash whose work took more than three expiries
// to resume, with the faults injected while it waited.
func (s *soak) logSlowResumes() {
	for _, k := range s.kills {
		if k.resumed <= 3*soakExpiry {
			continue
		}
		during := map[string]int{}
		for _, f := range s.timeline {
			if !f.at.Before(k.at) && f.at.Before(k.at.Add(k.resumed)) {
				during[f.kind]++
			}
		}
		s.t.Logf("the work of %s (%d tasks) resumed after %v; meanwhile: %v", k.owner, len(k.held), k.resumed.Round(time.Millisecond), during)
	}
}
