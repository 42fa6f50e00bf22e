package taskproc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Grouped settlement. The completions of a topic's batches that are written
// as one statement each (see alone) take turns, settleTurns at once, and
// those that become ready while every turn is taken go together in the
// next statement: a group commit, which adds no wait to a completion
// written alone and writes fewer statements when batches end at once. With a settlement
// window (WithSettleWindow), the turn's holder first waits out the window
// from the moment the first completion of its group came, gathering
// others, unless the run stops (the group is written at once) or the group
// holds maxGathered tasks.
//
// A completion whose batch is given up while it waits (a fence, a Stop
// that ran out of time) leaves its group unwritten, as one that was never
// sent. The statement of a group is all or nothing: when the database
// refuses it for what it says (a task another owner took, a bad
// argument), each completion of the group is written alone, so that its
// own answer is its own; when the database fails, each batch reads back
// what it wrote, as after any failure (see settle.go).

// maxGathered is the most tasks a group's statement completes.
const maxGathered = 1000

// errWriteAlone tells a completion that its group's statement was refused
// for another's tasks, or for its own: it is to be written alone.
var errWriteAlone = errors.New("taskproc: the group's statement was refused; written alone")

// settleGroup gathers the grouped completions of one topic.
type settleGroup struct {
	window time.Duration
	turn   chan struct{} // holds a token for each group that waits out its window or is written
	mu     sync.Mutex
	open   []*gathering // the groups waiting for a turn; completions join the last
}

func newSettleGroup(window time.Duration) *settleGroup {
	return &settleGroup{window: window, turn: make(chan struct{}, settleTurns)}
}

// settleTurns is how many groups of a topic are written at once: a
// burn-down's workers write their batches side by side, as they did before
// groups (one at a time, the burn-down through taskproc ran at 0.8 of its
// rate), and completions group once that many writes are under way.
const settleTurns = 4

// gathering is a group of completions waiting for their statement.
type gathering struct {
	opened  time.Time
	members []*member
	tasks   int
	full    chan struct{} // closed once the group holds maxGathered tasks
	taken   bool          // a turn writes it: no completion joins or leaves
}

// member is one batch's completions in a group, with the group's answer
// once written.
type member struct {
	completions []taskapi.Completion
	err         error
	done        chan struct{}
}

// complete has completions written in a group, by write, and returns the
// answer for them: flush ends the window of a group (the run stops).
func (g *settleGroup) complete(ctx context.Context, flush <-chan struct{}, completions []taskapi.Completion,
	write func(context.Context, []taskapi.Completion) error) error {
	m := &member{completions: completions, done: make(chan struct{})}
	gth := g.join(m)
	select {
	case g.turn <- struct{}{}:
	case <-m.done: // written in another's turn
		return m.err
	case <-ctx.Done():
		return g.leaveOrWait(ctx, gth, m)
	}
	defer func() { <-g.turn }()
	select {
	case <-m.done:
		return m.err
	default:
	}
	if g.window > 0 {
		wait := time.NewTimer(time.Until(gth.opened.Add(g.window)))
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-gth.full:
		case <-flush:
		case <-ctx.Done():
			return g.leaveOrWait(ctx, gth, m)
		}
	}
	members := g.take(gth)
	if members == nil { // another turn took m's group after the same window
		<-m.done
		return m.err
	}
	var all []taskapi.Completion
	for _, o := range members {
		all = append(all, o.completions...)
	}
	err := write(ctx, all)
	for _, o := range members {
		o.err = err
		if err != nil && len(members) > 1 && (staleOf(err) != nil || refused(err, nil)) {
			o.err = errWriteAlone
		}
		close(o.done)
	}
	return m.err
}

// join adds m to the last group that waits, or to a new one when that
// one holds maxGathered tasks, and returns it.
func (g *settleGroup) join(m *member) *gathering {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.open) == 0 || g.open[len(g.open)-1].tasks >= maxGathered {
		g.open = append(g.open, &gathering{opened: time.Now(), full: make(chan struct{})})
	}
	gth := g.open[len(g.open)-1]
	gth.members = append(gth.members, m)
	if gth.tasks += len(m.completions); gth.tasks >= maxGathered {
		select {
		case <-gth.full: // full before a completion left it
		default:
			close(gth.full)
		}
	}
	return gth
}

// close takes gth out of the groups that wait.
func (g *settleGroup) close(gth *gathering) {
	g.open = slices.DeleteFunc(g.open, func(o *gathering) bool { return o == gth })
}

// leaveOrWait takes m out of its group, whose turn has not come, and
// returns errUnsent with ctx's cause; m's group being written, it returns
// its answer.
func (g *settleGroup) leaveOrWait(ctx context.Context, gth *gathering, m *member) error {
	g.mu.Lock()
	if !gth.taken {
		gth.members = slices.DeleteFunc(gth.members, func(o *member) bool { return o == m })
		gth.tasks -= len(m.completions)
		if len(gth.members) == 0 {
			g.close(gth)
		}
		g.mu.Unlock()
		return fmt.Errorf("%w: %w", errUnsent, context.Cause(ctx))
	}
	g.mu.Unlock()
	<-m.done
	return m.err
}

// take takes gth for its statement and returns its members, none when
// another turn took it.
func (g *settleGroup) take(gth *gathering) []*member {
	g.mu.Lock()
	defer g.mu.Unlock()
	if gth.taken {
		return nil
	}
	gth.taken = true
	g.close(gth)
	return gth.members
}

// completeGrouped writes the decisions of completion, a function that
// takes no transaction, for live, as the attempt's one statement, in a
// group of the topic's, each group in a transaction of the runtime's.
func (s *batchSettler[Tx]) completeGrouped(ctx context.Context, b *Batch, completion any, live []taskapi.Task, o *outcome) error {
	b.after, b.live = nil, live
	var none Tx // a function that takes no transaction is given none
	d, err := runCompletion(ctx, none, completion)
	if err != nil {
		o.fnErr = err
		return err
	}
	completions, err := completionsOf(b.tasks, live, d)
	if err != nil {
		o.refused = true
		return err
	}
	o.decided = decisionsOf(completions)
	if len(completions) == 0 {
		return nil
	}
	o.evidence, o.completes = &completions[0].Task, []taskapi.State{completions[0].Decision.Result.State()}
	write := func(ctx context.Context, completions []taskapi.Completion) error {
		ctx, cancel := s.m.own.bounded(ctx) // the write is bounded, not the window
		defer cancel()
		return s.m.transact(ctx, func(tx Tx) error { return s.repo.Complete(ctx, tx, b.topic, completions...) })
	}
	err = s.m.group.complete(ctx, s.r.loopCtx.Done(), completions, write)
	if errors.Is(err, errWriteAlone) {
		err = write(ctx, completions)
	}
	return err
}
