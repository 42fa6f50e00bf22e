package taskproc

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// completion returns the completion function of a batch of a Composite: it
// runs the contexts over the decisions of the steps, writes the follow-ups
// of the tasks that succeeded and asks for their topics to be resumed once
// it committed. Every attempt starts again from the steps' decisions.
func completion[Tx any](b *Batch, contexts []ContextFunc[Tx], decided Decisions, s *Supplement) func(context.Context, Tx) (Decisions, error) {
	return func(ctx context.Context, tx Tx) (Decisions, error) {
		c := newCompleting(b.attemptTasks(), decided, s)
		for i, fn := range contexts {
			if err := callContext(ctx, tx, fn, c); err != nil {
				return nil, fmt.Errorf("taskproc: context %d of the composite: %w", i+1, err)
			}
		}
		topics, err := writeFollowUps(ctx, tx, b.repo, c)
		if err != nil {
			return nil, err
		}
		b.resumeAfterCommit(topics...)
		return c.Decisions(), nil
	}
}

// callContext calls fn, turning a panic into an error.
func callContext[Tx any](ctx context.Context, tx Tx, fn ContextFunc[Tx], c *Completing) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	return fn(ctx, tx, c)
}

// writeFollowUps writes the follow-ups of the tasks of c that succeeded
// through repo, the batch's Repository[Tx]: all the pushes, then all the
// joins, each topic in turn in sorted order and, within a topic, one call
// for each mode in ordinal order. A topic with nothing to write gets no
// call. It returns the topics written to, sorted.
func writeFollowUps[Tx any](ctx context.Context, tx Tx, repo any, c *Completing) ([]string, error) {
	c.mu.Lock()
	succeeded := func(task taskapi.Task) bool { return c.decisions[task].Result == taskapi.Success }
	pushes, joins := dueFollowUps(c.pushes, succeeded), dueFollowUps(c.joins, succeeded)
	c.mu.Unlock()
	if len(pushes) == 0 && len(joins) == 0 {
		return nil, nil
	}
	r, ok := repo.(Repository[Tx])
	if !ok {
		return nil, fmt.Errorf("taskproc: write follow-ups: the batch's repository is a %T, not a Repository[%T]: %w", repo, tx, taskapi.ErrInvalidArgument)
	}
	err := writeEach(pushes, taskapi.Append, taskapi.Delete, func(topic string, insertion taskapi.Insertion, creations []taskapi.Creation) error {
		_, err := r.Push(ctx, tx, topic, insertion, creations...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("taskproc: push follow-ups: %w", err)
	}
	err = writeEach(joins, taskapi.Singular, taskapi.Eternal, func(topic string, junction taskapi.Junction, groups [][]string) error {
		_, err := r.Join(ctx, tx, topic, junction, groups...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("taskproc: join follow-ups: %w", err)
	}
	topics := slices.AppendSeq(slices.Collect(maps.Keys(pushes)), maps.Keys(joins))
	slices.Sort(topics)
	return slices.Compact(topics), nil
}

// dueFollowUps gathers the items of the follow-ups whose parent succeeded, by topic
// and mode, in the order of the parents' sequences and, for one parent, in
// registration order. Topics and modes without items are left out.
func dueFollowUps[M ~int, V any](list []followUp[M, V], succeeded func(taskapi.Task) bool) map[string]map[M][]V {
	sorted := slices.Clone(list)
	slices.SortStableFunc(sorted, func(a, b followUp[M, V]) int { return cmp.Compare(a.parent.Sequence, b.parent.Sequence) })
	byTopic := map[string]map[M][]V{}
	for _, f := range sorted {
		if len(f.items) == 0 || !succeeded(f.parent) {
			continue
		}
		if byTopic[f.topic] == nil {
			byTopic[f.topic] = map[M][]V{}
		}
		byTopic[f.topic][f.mode] = append(byTopic[f.topic][f.mode], f.items...)
	}
	return byTopic
}

// writeEach calls write for each topic of byTopic in sorted order and,
// within a topic, for each mode from first to last that has items.
func writeEach[M ~int, V any](byTopic map[string]map[M][]V, first, last M, write func(topic string, mode M, items []V) error) error {
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		for mode := first; mode <= last; mode++ {
			if items := byTopic[topic][mode]; len(items) > 0 {
				if err := write(topic, mode, items); err != nil {
					return fmt.Errorf("topic %q, %v: %w", topic, mode, err)
				}
			}
		}
	}
	return nil
}
