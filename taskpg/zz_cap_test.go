package taskpg_test

import (
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

func TestZZCapacity(t *testing.T) {
	db, repo := benchSetup(t)
	ctx := t.Context()
	if err := repo.SetCapacity(ctx, db, benchTopic, 1<<40); err != nil {
		t.Fatal(err)
	}
	report := func() {
		var rel, idx, dead, live int64
		db.QueryRow(ctx, "SELECT pg_relation_size('public.task_allowance'), pg_relation_size('public.task_allowance_pkey'), n_dead_tup, n_live_tup FROM pg_stat_user_tables WHERE relid = 'public.task_allowance'::regclass").Scan(&rel, &idx, &dead, &live)
		t.Logf("table %d bytes, index %d bytes, dead %d live %d", rel, idx, dead, live)
	}
	for round := 0; round < 4; round++ {
		start := time.Now()
		var wg sync.WaitGroup
		for p := 0; p < 16; p++ {
			wg.Go(func() {
				for i := 0; i < 125; i++ {
					if _, err := repo.Push(ctx, db, benchTopic, taskapi.Append, benchCreations(i, 1)...); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("2000 pushes in %v", time.Since(start))
		report()
	}
}
