package taskproc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A ContextFunc runs in the transaction that completes a batch of a
// Composite, after all the steps: it may write the caller's own data
// through tx, worsen decisions and register follow-ups, through c. When it
// returns an error, or panics, nothing of the completion is committed and
// the batch fails. A completion that is tried again (after a conflict, say)
// runs every context again, with the decisions of the steps.
type ContextFunc[Tx any] func(ctx context.Context, tx Tx, c *Completing) error

// Completing is a batch of a Composite being completed: the decisions of
// its tasks so far, and the follow-ups registered for them. Follow-ups are
// written, in the same transaction, only for the tasks whose decision after
// the last context is Success. A Completing is safe for use by many
// goroutines.
type Completing struct {
	mu         sync.Mutex
	tasks      []taskapi.Task
	decisions  Decisions
	supplement *Supplement
	pushes     []followUp[taskapi.Insertion, taskapi.Creation]
	joins      []followUp[taskapi.Junction, []string]
}

// A followUp is what to write to a topic once its parent task succeeded:
// creations to push with an insertion mode, or groups to join with a
// junction.
type followUp[M ~int, V any] struct {
	parent taskapi.Task
	topic  string
	mode   M
	items  []V
}

// newCompleting returns a Completing of tasks with a copy of their
// decisions.
func newCompleting(tasks []taskapi.Task, decisions Decisions, s *Supplement) *Completing {
	own := make(Decisions, len(tasks))
	for _, task := range tasks {
		if d, ok := decisions[task]; ok {
			own[task] = d
		}
	}
	return &Completing{tasks: tasks, decisions: own, supplement: s}
}

// Tasks returns the tasks of the batch in poll order, those that
// deduplication dropped included.
func (c *Completing) Tasks() []taskapi.Task { return slices.Clone(c.tasks) }

// Decision returns the decision of task so far, and false when task is not
// in the batch.
func (c *Completing) Decision(task taskapi.Task) (taskapi.Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.decisions[task]
	return d, ok
}

// Decisions returns a copy of the decisions of all the tasks so far.
func (c *Completing) Decisions() Decisions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.decisions)
}

// Merge merges d into the decision of task: the more severe result stays,
// so a decision can only get worse, and the outputs are both kept, joined
// by "; ". It returns an ErrInvalidArgument for a task not in the batch or
// an undefined result.
func (c *Completing) Merge(task taskapi.Task, d taskapi.Decision) error {
	if !d.Result.Valid() {
		return fmt.Errorf("taskproc: merge result %v: %w", d.Result, taskapi.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.decisions[task]
	if !ok {
		return notInBatch(task)
	}
	c.decisions[task] = mergeDecisions(old, d)
	return nil
}

// Supplement returns the supplement that the steps of the batch shared.
func (c *Completing) Supplement() *Supplement { return c.supplement }

// Push registers creations to push to topic with insertion once parent
// succeeded. It returns an ErrInvalidArgument for a parent not in the
// batch, an empty topic or an undefined insertion.
func (c *Completing) Push(parent taskapi.Task, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) error {
	if !insertion.Valid() {
		return fmt.Errorf("taskproc: push with insertion %v: %w", insertion, taskapi.ErrInvalidArgument)
	}
	return register(c, &c.pushes, followUp[taskapi.Insertion, taskapi.Creation]{
		parent: parent, topic: topic, mode: insertion, items: slices.Clone(creations),
	})
}

// PushTagged is Push with the Reference of each creation set to parent's
// sequence, in decimal, so that the new tasks can be traced to it.
func (c *Completing) PushTagged(parent taskapi.Task, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) error {
	tagged := slices.Clone(creations)
	for i := range tagged {
		tagged[i].Reference = strconv.FormatInt(parent.Sequence, 10)
	}
	return c.Push(parent, topic, insertion, tagged...)
}

// Join registers groups to join in topic with junction once parent
// succeeded. It returns an ErrInvalidArgument for a parent not in the
// batch, an empty topic or an undefined junction.
func (c *Completing) Join(parent taskapi.Task, topic string, junction taskapi.Junction, groups ...[]string) error {
	if !junction.Valid() {
		return fmt.Errorf("taskproc: join with junction %v: %w", junction, taskapi.ErrInvalidArgument)
	}
	cloned := make([][]string, len(groups))
	for i, g := range groups {
		cloned[i] = slices.Clone(g)
	}
	return register(c, &c.joins, followUp[taskapi.Junction, []string]{parent: parent, topic: topic, mode: junction, items: cloned})
}

// register adds f to list once its parent and topic are checked.
func register[M ~int, V any](c *Completing, list *[]followUp[M, V], f followUp[M, V]) error {
	if f.topic == "" {
		return fmt.Errorf("taskproc: follow-up without a topic: %w", taskapi.ErrInvalidArgument)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.decisions[f.parent]; !ok {
		return notInBatch(f.parent)
	}
	*list = append(*list, f)
	return nil
}

// notInBatch is the error of a call for a task that is not in the batch.
func notInBatch(task taskapi.Task) error {
	return fmt.Errorf("taskproc: task %d is not in the batch: %w", task.Sequence, taskapi.ErrInvalidArgument)
}
