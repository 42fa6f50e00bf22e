package taskproc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// BenchmarkDeferredStart measures how late a deferred task starts: b.N
// tasks are pushed, each deferred to a random time 20 to 500 ms ahead, to
// an idle Manager on taskpg with its default pause of a second and no
// Notifier; the handler records when each task starts. It reports the
// p50, p99 and maximum of start − NotBefore, and the polls per second
// while it ran, which stay near one per deferred time rather than one per
// millisecond:
//
//	go test ./taskproc -run '^$' -bench DeferredStart -benchtime 400x
func BenchmarkDeferredStart(b *testing.B) {
	ctx := context.Background()
	pool := testdb.Postgres(b)
	repo, err := taskpg.New("bench")
	if err == nil {
		_, err = repo.Register(ctx, pool)
	}
	if err == nil {
		_, err = repo.Initialize(ctx, pool, topic)
	}
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu    sync.Mutex
		late  []time.Duration
		due   = map[int64]time.Time{}
		polls atomic.Int64
		done  = make(chan struct{})
	)
	handler := taskproc.Sequential(func(_ context.Context, task taskapi.Task) (taskapi.Decision, error) {
		started := time.Now()
		mu.Lock()
		defer mu.Unlock()
		late = append(late, started.Sub(due[task.Sequence]))
		if len(late) == b.N {
			close(done)
		}
		return taskapi.Decision{Result: taskapi.Success}, nil
	})
	count := taskproc.ObserverFunc(func(e taskproc.Event) {
		if e.Kind == taskproc.EventEmpty || e.Kind == taskproc.EventPolled {
			polls.Add(1)
		}
	})
	m, err := taskproc.NewManager[taskpg.DB](repo, taskpg.Transact(pool), topic, handler, taskproc.WithObserver(count))
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = m.Stop(ctx) }()
	b.ResetTimer()
	began := time.Now()
	for i := range b.N {
		at := time.Now().Add(20*time.Millisecond + rand.N(480*time.Millisecond))
		mu.Lock() // the handler must not see the task before its time is known
		pushed, err := repo.Push(ctx, pool, topic, taskapi.Append, taskapi.Creation{Identifier: fmt.Sprint("id-", i), NotBefore: at})
		if err == nil {
			due[pushed[0].Sequence] = at
		}
		mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		m.Resume() // as the push's wake-up would
		time.Sleep(time.Duration(rand.N(5)) * time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(patience):
		b.Fatalf("%d of %d deferred tasks started within %v", len(late), b.N, patience)
	}
	elapsed := time.Since(began)
	b.StopTimer()
	slices.Sort(late)
	pct := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	b.ReportMetric(float64(polls.Load())/elapsed.Seconds(), "polls/s")
}
