//go:build soak

package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/taskapi"
)

// soakInvariant is one rule every committed task obeys at every moment:
// its query returns the instances that break it (at most a few).
type soakInvariant struct {
	name, query string
	final       bool // checked only once the queue has drained
}

// The invariants, with the topic as $1 and how long an owner may stay
// silent while it holds Active tasks (it is expiring) as $2.
var soakInvariants = []soakInvariant{
	{name: "a committed order lost its task", query: `SELECT o.id FROM fault_order o
		WHERE NOT EXISTS (SELECT FROM task t WHERE t.topic = $1 AND t.identifier = o.id)
		AND NOT EXISTS (SELECT FROM fault_purged p WHERE p.id = o.id) LIMIT 3`},
	{name: "a task without its order", query: `SELECT t.identifier FROM task t WHERE t.topic = $1
		AND NOT EXISTS (SELECT FROM fault_order o WHERE o.id = t.identifier) LIMIT 3`},
	{name: "an order with two tasks", query: `SELECT identifier FROM task WHERE topic = $1
		GROUP BY identifier HAVING count(*) > 1 LIMIT 3`},
	{name: "a purged task came back", query: `SELECT p.id FROM fault_purged p
		JOIN task t ON t.topic = $1 AND t.identifier = p.id LIMIT 3`},
	{name: "a task succeeded twice", query: `SELECT sequence::text FROM fault_effect WHERE result = 'SUCCESS'
		GROUP BY sequence HAVING count(*) > 1 LIMIT 3`},
	{name: "a result without the work that decided it", query: `SELECT t.sequence::text FROM task t
		LEFT JOIN LATERAL (SELECT result FROM fault_effect e WHERE e.sequence = t.sequence ORDER BY e.id DESC LIMIT 1) e ON true
		WHERE t.topic = $1 AND t.state IN (4, 5, 6)
		AND e.result IS DISTINCT FROM (CASE t.state WHEN 4 THEN 'SUSPENSION' WHEN 5 THEN 'FILTER' ELSE 'SUCCESS' END) LIMIT 3`},
	{name: "an Active task without a live or expiring owner", query: `SELECT t.sequence || ' of ' || coalesce(t.owner, '?') FROM task t
		LEFT JOIN task_owner o ON o.owner = t.owner
		WHERE t.topic = $1 AND t.state = 0
		AND (o.owner IS NULL OR o.heartbeat < (now() AT TIME ZONE 'utc') - $2::interval) LIMIT 3`},
	{name: "a task not finished after the drain", final: true, query: `SELECT sequence::text FROM task
		WHERE topic = $1 AND state NOT IN (3, 4, 5, 6) LIMIT 3`},
	{name: "a task ended against its fate", final: true, query: `SELECT sequence || ' ' || input || ' ' || state FROM task
		WHERE topic = $1 AND NOT (state = 3
			OR state = 4 AND input = 'suspend' OR state = 5 AND input = 'filter'
			OR state = 6 AND input IN ('success', 'flaky', 'sleepy')) LIMIT 3`},
}

// args returns the arguments that the query of inv takes: the topic ($1)
// and how long an owner may stay silent ($2).
func (inv soakInvariant) args(silent string) []any {
	all := []any{soakTopic, silent}
	for i := len(all); i > 0; i-- {
		if strings.Contains(inv.query, fmt.Sprintf("$%d", i)) {
			return all[:i]
		}
	}
	return nil
}

// check checks every invariant in one snapshot of the database, and that
// the repository's counts agree with the rows. A check the database could
// not answer (a restart under way) is skipped. final adds the invariants
// of a drained queue and those about every kill and push.
func (s *soak) check(final bool) {
	ctx := context.Background()
	expiring := (4 * soakExpiry).String()
	err := pgx.BeginTxFunc(ctx, s.direct, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		for _, inv := range soakInvariants {
			if inv.final && !final {
				continue
			}
			found, err := column(ctx, tx, inv.query, inv.args(expiring)...)
			if err != nil {
				return err
			}
			s.violated(inv.name, found)
		}
		return s.checkCounts(ctx, tx)
	})
	if err != nil && final {
		s.t.Fatalf("the final check could not run: %v", err)
	}
	if final {
		s.checkKills(ctx)
		s.checkCommitted(ctx)
	}
	if err == nil {
		s.mu.Lock()
		s.checks++
		s.mu.Unlock()
	}
}

// checkCounts checks that Count agrees with the rows of the topic, state
// by state, and that orders, tasks and purged orders add up.
func (s *soak) checkCounts(ctx context.Context, tx pgx.Tx) error {
	counts, err := s.repo.Count(ctx, tx, taskapi.Total, taskapi.Counting{Topic: soakTopic}, taskapi.Unbounded)
	if err != nil {
		return err
	}
	rows, _ := tx.Query(ctx, "SELECT state, count(*), max(sequence) FROM task WHERE topic = $1 GROUP BY state", soakTopic)
	want := map[taskapi.State]taskapi.Summary{}
	var state int16
	var summary taskapi.Summary
	_, err = pgx.ForEachRow(rows, []any{&state, &summary.Count, &summary.Bound}, func() error {
		want[taskapi.State(state)] = summary
		return nil
	})
	if err != nil {
		return err
	}
	if !maps.Equal(counts[soakTopic], want) {
		s.violated("Count disagrees with the rows", []string{fmt.Sprintf("%v, rows %v", counts[soakTopic], want)})
	}
	var orders, tasks, purged int64
	err = tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM fault_order), (SELECT count(*) FROM task WHERE topic = $1),
		(SELECT count(*) FROM fault_purged)`, soakTopic).Scan(&orders, &tasks, &purged)
	if err == nil && orders != tasks+purged {
		s.violated("orders are not tasks plus purged", []string{fmt.Sprintf("%d orders, %d tasks, %d purged", orders, tasks, purged)})
	}
	return err
}

// checkKills checks that no killed process committed any work after its
// death.
func (s *soak) checkKills(ctx context.Context) {
	for _, k := range s.kills {
		found, err := column(ctx, s.direct, `SELECT sequence::text FROM fault_effect
			WHERE (owner = $1 OR owner LIKE $1 || '#%') AND at > $2 LIMIT 3`, k.owner, k.at)
		if err != nil {
			s.t.Fatal(err)
		}
		s.violated("a killed process completed a task", found)
	}
}

// checkCommitted checks that every push a producer saw commit has its
// order.
func (s *soak) checkCommitted(ctx context.Context) {
	ids := slices.Collect(maps.Keys(s.producers.committed))
	found, err := column(ctx, s.direct, `SELECT id FROM unnest($1::text[]) AS c(id)
		WHERE NOT EXISTS (SELECT FROM fault_order o WHERE o.id = c.id) LIMIT 3`, ids)
	if err != nil {
		s.t.Fatal(err)
	}
	s.violated("a push seen committed is missing", found)
}

// column runs query and returns its one text column.
func column(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, _ := q.Query(ctx, query, args...)
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// violated records instances of a broken invariant; the first of each
// invariant fails the test with its instances.
func (s *soak) violated(invariant string, instances []string) {
	if len(instances) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, seen := s.wrong[invariant]; !seen {
		s.t.Errorf("invariant broken: %s: %s", invariant, strings.Join(instances, "; "))
	}
	s.wrong[invariant] += len(instances)
}

// watchResumes notes, for each kill whose tasks have not all resumed yet,
// which of them have: completed, purged, or Active under another owner.
// A task counts as resumed once seen so, even if it comes back later (a
// revival of its failure), and the kill's work has resumed once all of its
// tasks have.
func (s *soak) watchResumes() {
	s.mu.Lock()
	pending := maps.Clone(s.waiting)
	s.mu.Unlock()
	for k, seqs := range pending {
		waiting, err := column(context.Background(), s.direct, `SELECT sequence::text FROM task WHERE topic = $1 AND sequence = ANY($2)
			AND (state IN (1, 2) OR state = 0 AND (owner = $3 OR owner LIKE $3 || '#%'))`, soakTopic, seqs, k.owner)
		if err != nil {
			continue
		}
		seqs = slices.DeleteFunc(seqs, func(seq int64) bool { return !slices.Contains(waiting, strconv.FormatInt(seq, 10)) })
		s.mu.Lock()
		if s.waiting[k] = seqs; len(seqs) == 0 {
			k.resumed = time.Since(k.at)
			delete(s.waiting, k)
		}
		s.mu.Unlock()
	}
}
