package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

const restartTopic = "restart"

// load is producers and consumer processes at work on a topic of a
// PostgreSQL of the test's own.
type load struct {
	pool      *pgxpool.Pool
	repo      *taskpg.Repository
	workers   []*worker
	producers *producers
}

// startLoad starts a PostgreSQL for t alone, two consumer processes and
// two producers on topic.
func startLoad(t *testing.T, topic string) (*testdb.Cluster, *load) {
	cluster := testdb.OwnPostgres(t)
	l := &load{}
	l.pool, l.repo = openFaultDB(t, cluster.URL(), topic)
	for i := range 2 {
		l.workers = append(l.workers, startWorker(t, cluster.URL(), topic, fmt.Sprintf("%s-worker-%d", topic, i), "-expiry", "5s"))
	}
	l.producers = startProducers(l.pool, l.repo, topic, 2)
	return cluster, l
}

// producers push orders, each with its task, in transactions of their own
// until stopped, and remember the orders whose commit they saw succeed.
type producers struct {
	mu        sync.Mutex
	committed map[string]bool
	failed    int
	stop      chan struct{}
	done      sync.WaitGroup
	// orders returns the tasks of one transaction of producer, the ith:
	// their identifiers name the orders written with them.
	orders func(producer, i int) []taskapi.Creation
	pace   time.Duration // between two transactions of a producer
}

// oneOrder is the orders of the restart and snapshot tests: one order,
// with a task of the same name, per transaction.
func oneOrder(producer, i int) []taskapi.Creation {
	return []taskapi.Creation{{Identifier: fmt.Sprintf("order-%d-%d", producer, i)}}
}

func startProducers(pool *pgxpool.Pool, repo *taskpg.Repository, topic string, n int) *producers {
	p := &producers{committed: map[string]bool{}, stop: make(chan struct{}), orders: oneOrder, pace: 2 * time.Millisecond}
	p.start(pool, repo, topic, n)
	return p
}

// start starts n producers on taskpg.
func (p *producers) start(pool *pgxpool.Pool, repo *taskpg.Repository, topic string, n int) {
	p.startWith(n, func(ctx context.Context, creations []taskapi.Creation) error {
		return taskpg.Transact(pool)(ctx, func(tx taskpg.DB) error {
			for _, c := range creations {
				if _, err := tx.Exec(ctx, "INSERT INTO fault_order (id) VALUES ($1)", c.Identifier); err != nil {
					return err
				}
			}
			_, err := repo.Push(ctx, tx, topic, taskapi.Append, creations...)
			return err
		})
	})
}

// startWith starts n producers that commit each transaction of orders with
// push: the orders' rows and their tasks, all or nothing.
func (p *producers) startWith(n int, push func(ctx context.Context, creations []taskapi.Creation) error) {
	for i := range n {
		p.done.Go(func() { p.produce(push, i) })
	}
}

// produce pushes one transaction of orders after another; a failed one is
// not retried (its orders may or may not exist: the commit's outcome is
// unknown).
func (p *producers) produce(push func(ctx context.Context, creations []taskapi.Creation) error, producer int) {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-p.stop:
			return
		default:
		}
		creations := p.orders(producer, i)
		err := push(ctx, creations)
		p.mu.Lock()
		for _, c := range creations {
			if err == nil {
				p.committed[c.Identifier] = true
			}
		}
		if err != nil {
			p.failed++
		}
		p.mu.Unlock()
		if err != nil {
			time.Sleep(50 * time.Millisecond)
		} else {
			time.Sleep(p.pace)
		}
	}
}

func (p *producers) halt() {
	close(p.stop)
	p.done.Wait()
}

// TestDatabaseRestartsLoseNothing restarts the test's own PostgreSQL, fast
// and then immediate (a crash), while producers push and consumer
// processes work. Clients see errors and carry on; afterwards every push
// whose commit succeeded is there, every task present has its order and
// succeeded once, and the consumers resumed by themselves.
func TestDatabaseRestartsLoseNothing(t *testing.T) {
	ctx := context.Background()
	cluster, l := startLoad(t, restartTopic)
	pool, repo, workers, prod := l.pool, l.repo, l.workers, l.producers
	var restarted time.Time
	for _, mode := range []testdb.StopMode{testdb.StopFast, testdb.StopImmediate} {
		time.Sleep(time.Second)
		if err := cluster.Restart(mode); err != nil {
			t.Fatalf("restart %s: %v", mode, err)
		}
		restarted = time.Now().UTC()
		t.Logf("restarted (%s)", mode)
	}
	time.Sleep(time.Second)
	prod.halt()
	total := awaitAllSucceeded(t, pool, repo, restartTopic)
	for _, w := range workers {
		w.stop(t) // the same processes: nobody restarted them
	}
	checkProducedOnce(t, ctx, pool, prod, total)
	var first time.Time
	if err := pool.QueryRow(ctx, "SELECT min(at) FROM fault_effect WHERE at > $1", restarted).Scan(&first); err != nil {
		t.Fatalf("no work committed after the last restart: %v", err)
	}
	t.Logf("%d orders committed, %d pushes failed during the restarts; work resumed %v after the last restart",
		len(prod.committed), prod.failed, first.Sub(restarted).Round(time.Millisecond))
}

// checkProducedOnce checks that every order and only orders got a task,
// that every task's work committed once, and that no push whose commit
// succeeded was lost.
func checkProducedOnce(t *testing.T, ctx context.Context, pool *pgxpool.Pool, prod *producers, total int64) {
	var orders, tasksWithoutOrder, effects, distinct int64
	queries := []struct {
		sql  string
		dest *int64
	}{
		{"SELECT count(*) FROM fault_order", &orders},
		{"SELECT count(*) FROM fault_effect", &effects},
		{"SELECT count(DISTINCT identifier) FROM fault_effect", &distinct},
		{"SELECT count(*) FROM fault_effect e WHERE NOT EXISTS (SELECT FROM fault_order o WHERE o.id = e.identifier)", &tasksWithoutOrder},
	}
	for _, q := range queries {
		if err := pool.QueryRow(ctx, q.sql).Scan(q.dest); err != nil {
			t.Fatal(err)
		}
	}
	if orders != total || effects != total || distinct != total || tasksWithoutOrder != 0 {
		t.Errorf("%d orders, %d tasks succeeded, %d effects of %d identifiers, %d without order: want one of each per order",
			orders, total, effects, distinct, tasksWithoutOrder)
	}
	committed := slices.Collect(maps.Keys(prod.committed))
	var order string
	var n int
	err := pool.QueryRow(ctx, `SELECT c.id, count(e.identifier) FROM unnest($1::text[]) AS c(id)
		LEFT JOIN fault_effect e ON e.identifier = c.id GROUP BY c.id HAVING count(e.identifier) <> 1 LIMIT 1`, committed).Scan(&order, &n)
	if err == nil {
		t.Fatalf("order %s committed, but its task's work committed %d times", order, n)
	} else if !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	if int64(len(prod.committed)) > total {
		t.Errorf("%d pushes committed, only %d tasks", len(prod.committed), total)
	}
}

// awaitAllSucceeded waits until no task of topic is left to do and every
// one succeeded, and returns how many there are.
func awaitAllSucceeded(t *testing.T, pool *pgxpool.Pool, repo *taskpg.Repository, topic string) int64 {
	deadline := time.Now().Add(settleWithin)
	for {
		counts, err := repo.Count(context.Background(), pool, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		if err == nil && len(counts[topic]) == 1 && counts[topic][taskapi.Succeeded].Count > 0 {
			return counts[topic][taskapi.Succeeded].Count
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks of %s after %v: %v (%v), want every one SUCCEEDED", topic, settleWithin, counts[topic], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
