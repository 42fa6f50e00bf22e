package taskproc_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

func termHoldCases[Tx any](all map[string]suiteCase[Tx]) {
	// The database ends the leader's term while its handler works (a step
	// of the database's clock, a process stopped past its term) and
	// another owner leads at once; the leader's own timer, a minute long,
	// says nothing yet. Its settlement must not commit: the completing
	// transaction ends with the term's check, which the database refuses,
	// and the task goes back to Ready with none of its writes.
	all["ASettlementUnderATermOverInTheDatabaseIsRefused"] = func(t *testing.T, e *env[Tx]) {
		e.effects()
		task := e.push("led")[0]
		terms := make(chan taskapi.Term, 1)
		working, settle := make(chan struct{}), make(chan struct{})
		settled := make(chan error, 1)
		m := e.manager(taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
			close(working)
			<-settle
			err := taskproc.CompleteTx(b, func(ctx context.Context, tx Tx) (taskproc.Decisions, error) {
				for _, task := range b.Tasks() {
					if err := e.writeEffect(ctx, tx, task); err != nil {
						return nil, err
					}
				}
				return every(b, taskapi.Success), nil
			})
			settled <- err
			return nil
		}), taskproc.WithLeadership(time.Minute), taskproc.WithLeaderCallback(func(ctx context.Context, term taskapi.Term) {
			select {
			case terms <- term:
			default:
			}
		}))
		e.start(m)
		term := within(t, "the first term", terms)
		within(t, "the handler at work", working)
		if err := e.repo.Concede(e.ctx, e.db, term); err != nil {
			t.Fatal(err)
		}
		if _, led, err := e.owner("usurper").Lead(e.ctx, e.db, topic, time.Hour); err != nil || !led {
			t.Fatalf("another owner's Lead after the term ended = %v, %v", led, err)
		}
		close(settle)
		if err := within(t, "the settlement", settled); err == nil {
			t.Error("the settlement under a term that is over succeeded")
		}
		if info := e.info(task); info.State == taskapi.Succeeded || e.effectRows(task) != 0 {
			t.Errorf("the task is %v with %d effects, want no result and no effect of the stale term", info.State, e.effectRows(task))
		}
	}
}
