//go:build soak

package faults

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// injected is a fault injected, and when.
type injected struct {
	at   time.Time
	kind string
}

// soakFault is one kind of fault; weight says how often it comes.
type soakFault struct {
	kind   string
	weight int
	inject func(s *soak) error
}

var soakFaults = []soakFault{
	{"crash", 3, (*soak).crash},
	{"cut", 4, (*soak).cut},
	{"pause", 1, (*soak).pause},
	{"revive", 2, (*soak).revive},
	{"purge", 1, (*soak).purge},
	{"defer", 2, (*soak).deferSome},
	{"restart", 1, (*soak).restart},
	// As often as their gaps let them, in the topologies that have them.
	{"failover", 4, (*soak).failover},
	{"pgbouncer restart", 4, (*soak).restartBouncer},
}

// inject injects one fault chosen at random and counts it. A fault the
// database refused (a restart under way, a deferred task polled first)
// counts as refused.
func (s *soak) inject() {
	total := 0
	for _, f := range soakFaults {
		total += f.weight
	}
	pick := rand.IntN(total)
	for _, f := range soakFaults {
		if pick -= f.weight; pick >= 0 {
			continue
		}
		err := f.inject(s)
		if errors.Is(err, errNotNow) {
			return
		}
		s.mu.Lock()
		s.timeline = append(s.timeline, injected{time.Now().UTC(), f.kind})
		if err != nil {
			s.faults[f.kind+" refused"]++
		} else {
			s.faults[f.kind]++
		}
		s.mu.Unlock()
		return
	}
}

// crash kills a consumer with SIGKILL, notes the tasks it held, and starts
// another one.
func (s *soak) crash() error {
	s.mu.Lock()
	owners := slices.Sorted(func(yield func(string) bool) {
		for o := range s.workers {
			if !yield(o) {
				return
			}
		}
	})
	victim := s.workers[owners[rand.IntN(len(owners))]]
	delete(s.workers, victim.owner)
	s.mu.Unlock()
	victim.kill(s.t)
	k := &kill{owner: victim.owner, at: time.Now().UTC()}
	infos, err := s.repo.Page(context.Background(), s.direct, soakTopic,
		taskapi.Listing{States: []taskapi.State{taskapi.Active}}, taskapi.Inception, 1<<20, taskapi.Forward)
	for _, info := range infos {
		if ownedBy(info.Owner, victim.owner) {
			k.held = append(k.held, info.Sequence)
		}
	}
	s.mu.Lock()
	s.kills = append(s.kills, k)
	if len(k.held) > 0 {
		s.waiting[k] = slices.Clone(k.held)
	}
	s.mu.Unlock()
	s.startWorker()
	return err
}

// ownedBy reports whether owner is process or a successor of it.
func ownedBy(owner, process string) bool {
	return owner == process || strings.HasPrefix(owner, process+"#")
}

// cut cuts every connection through the proxy, at once or after a random
// number of bytes, for up to half a second: shorter than the expiry, so
// the consumers' tasks survive it.
func (s *soak) cut() error {
	if s.proxy == nil {
		return errNotNow
	}
	if rand.IntN(2) == 0 {
		s.proxy.Cut()
	} else {
		s.proxy.CutAfter(1 + rand.Int64N(20*cutBudget))
	}
	time.Sleep(time.Duration(50+rand.IntN(450)) * time.Millisecond)
	s.proxy.Restore()
	return nil
}

// pause pauses or drains the topic for up to a second and a half, then
// lets it run again.
func (s *soak) pause() error {
	ctx := context.Background()
	activation := []taskapi.Activation{taskapi.Paused, taskapi.Draining}[rand.IntN(2)]
	if err := s.repo.SetActivation(ctx, s.direct, soakTopic, activation); err != nil {
		return err
	}
	time.Sleep(time.Duration(200+rand.IntN(1300)) * time.Millisecond)
	for {
		err := s.repo.SetActivation(ctx, s.direct, soakTopic, taskapi.Running)
		if err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond) // a restart under way: the topic must run again
	}
}

// revive brings some failed or suspended tasks back as Ready, in place.
func (s *soak) revive() error {
	state := []taskapi.State{taskapi.Failed, taskapi.Suspended}[rand.IntN(2)]
	_, err := s.repo.Revive(context.Background(), s.direct, soakTopic, taskapi.ReviveReset, state, taskapi.Unbounded, 50)
	return err
}

// errPurgeRaced rolls back a purge that deleted other tasks than it
// recorded.
var errPurgeRaced = errors.New("the purge deleted other tasks than it recorded")

// purge deletes the succeeded and filtered tasks, recording their orders as
// purged in the same transaction. It reads and deletes in one snapshot
// (REPEATABLE READ), so that it deletes exactly what it recorded.
func (s *soak) purge() error {
	ctx := context.Background()
	finished := taskapi.Listing{States: []taskapi.State{taskapi.Filtered, taskapi.Succeeded}}
	return pgx.BeginTxFunc(ctx, s.direct, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		infos, err := s.repo.Page(ctx, tx, soakTopic, finished, taskapi.Inception, 1<<20, taskapi.Forward)
		if err != nil {
			return err
		}
		ids := make([]string, len(infos))
		for i, info := range infos {
			ids[i] = info.Identifier
		}
		if _, err := tx.Exec(ctx, "INSERT INTO fault_purged (id) SELECT unnest($1::text[])", ids); err != nil {
			return err
		}
		n, err := s.repo.Purge(ctx, tx, soakTopic, taskapi.Unbounded, finished.States...)
		if err == nil && n != int64(len(ids)) {
			err = errPurgeRaced
		}
		return err
	})
}

// deferSome defers a few Ready tasks by up to a second. Defer refuses the
// lot when a consumer polled one of them first.
func (s *soak) deferSome() error {
	ctx := context.Background()
	infos, err := s.repo.Page(ctx, s.direct, soakTopic, taskapi.Listing{States: []taskapi.State{taskapi.Ready}},
		taskapi.Inception, 1+rand.IntN(20), taskapi.Backward)
	if err != nil || len(infos) == 0 {
		return err
	}
	tasks := make([]taskapi.Task, len(infos))
	for i, info := range infos {
		tasks[i] = info.Task
	}
	until := time.Now().Add(time.Duration(rand.IntN(1000)) * time.Millisecond)
	return taskpg.Transact(s.direct)(ctx, func(tx taskpg.DB) error {
		return s.repo.Defer(ctx, tx, soakTopic, until, tasks...)
	})
}

// restartGap is the least time between two restarts of the database.
const restartGap = 20 * time.Second

// errNotNow says that a fault was not injected, and is not counted.
var errNotNow = errors.New("not now")

// restart restarts the database, fast or immediately (a crash), at most
// once every restartGap.
func (s *soak) restart() error {
	if s.cluster == nil || time.Since(s.restarted) < restartGap {
		return errNotNow
	}
	s.restarted = time.Now()
	mode := []testdb.StopMode{testdb.StopFast, testdb.StopImmediate}[rand.IntN(2)]
	return s.cluster.Restart(mode)
}

// failoverGap is the least time between two failovers (topology failover):
// each rebuilds the dead node as the new standby, a few seconds.
const failoverGap = 10 * time.Second

// failover kills the primary and promotes the standby (topology
// failover), then rebuilds the dead node as the new standby.
func (s *soak) failover() error {
	if (s.pair == nil && s.auto == nil) || time.Since(s.restarted) < failoverGap {
		return errNotNow
	}
	s.restarted = time.Now()
	ctx := context.Background()
	if s.auto != nil {
		return s.autoFailover(ctx)
	}
	if err := s.pair.Failover(ctx); err != nil {
		s.t.Fatalf("failover: %v", err) // the harness's, not the library's: the soak cannot go on
	}
	if err := s.pair.Rejoin(ctx); err != nil {
		s.t.Fatalf("rejoin: %v", err)
	}
	return nil
}

// autoFailover crashes the primary's host processes and brings the node
// back as the standby, or switches over, at random (topology autofailover).
func (s *soak) autoFailover(ctx context.Context) error {
	start := time.Now()
	if rand.IntN(2) == 0 {
		if err := s.auto.Switchover(ctx); err != nil {
			s.t.Fatalf("switchover: %v", err) // the harness's, as in failover
		}
		s.t.Logf("switched over in %v", time.Since(start).Round(time.Millisecond))
		return nil
	}
	if err := s.auto.Crash(ctx); err != nil {
		s.t.Fatalf("crash: %v", err)
	}
	if err := s.auto.Recover(ctx); err != nil {
		s.t.Fatalf("recover: %v", err)
	}
	s.t.Logf("crashed the primary's host and recovered it in %v", time.Since(start).Round(time.Millisecond))
	return nil
}

// bouncerGap is the least time between two restarts of PgBouncer.
const bouncerGap = 8 * time.Second

// restartBouncer restarts PgBouncer (topology pgbouncer), waiting for the
// transactions under way (smart: its SIGINT) or closing every connection
// at once (fast), or crashes it (immediate).
func (s *soak) restartBouncer() error {
	if s.bouncer == nil || time.Since(s.bouncerRestarted) < bouncerGap {
		return errNotNow
	}
	s.bouncerRestarted = time.Now()
	mode := []testdb.StopMode{testdb.StopSmart, testdb.StopFast, testdb.StopImmediate}[rand.IntN(3)]
	start := time.Now()
	err := s.bouncer.Restart(mode)
	s.t.Logf("PgBouncer restarted (%s) in %v: %v", mode, time.Since(start).Round(time.Millisecond), err)
	return err
}
