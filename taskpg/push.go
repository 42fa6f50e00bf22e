package taskpg

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Push stores creations as tasks of topic, in one statement that also applies
// insertion to older tasks with the same identifiers.
func (r *Repository) Push(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations ...taskapi.Creation) ([]taskapi.Task, error) {
	if err := checkPush(topic, insertion, creations); err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	if len(creations) == 0 {
		return nil, nil
	}
	tasks, err := r.insert(ctx, db, topic, insertion, creations)
	if err != nil {
		return nil, wrapf(err, "push to %q", topic)
	}
	return tasks, nil
}

func checkPush(topic string, insertion taskapi.Insertion, creations []taskapi.Creation) error {
	if err := check.Topic(topic); err != nil {
		return err
	}
	if err := check.Enum(insertion); err != nil {
		return err
	}
	for _, c := range creations {
		if err := check.Creation(c); err != nil {
			return err
		}
	}
	return nil
}

// insert runs the push statement of insertion for valid creations, at least
// one, and returns the stored tasks in creation order.
func (r *Repository) insert(ctx context.Context, db DB, topic string, insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Task, error) {
	stored, states := storedCreations(insertion, creations)
	identifiers := make([]string, len(stored))
	references := make([]string, len(stored))
	inputs := make([]string, len(stored))
	for i, c := range stored {
		identifiers[i], references[i], inputs[i] = c.Identifier, c.Reference, c.Input
	}
	rows, _ := db.Query(ctx, r.q.push[insertion], topic, identifiers, states, references, inputs)
	sequences, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	switch {
	case err != nil:
		return nil, err
	case len(sequences) == 0:
		return nil, taskapi.ErrUnknownTopic
	case len(sequences) != len(stored):
		return nil, fmt.Errorf("stored %d tasks of %d", len(sequences), len(stored))
	}
	slices.Sort(sequences) // ascending sequences follow creation order
	tasks := make([]taskapi.Task, len(stored))
	for i, c := range stored {
		tasks[i] = taskapi.Task{Sequence: sequences[i], Identifier: c.Identifier, Input: c.Input}
	}
	return tasks, nil
}

// storedCreations returns the creations to store and the state of each. When
// an identifier appears several times in a batch, Replace and Supersede store
// its earlier creations Redundant and Delete drops them.
func storedCreations(insertion taskapi.Insertion, creations []taskapi.Creation) ([]taskapi.Creation, []int16) {
	last := map[string]int{}
	if insertion != taskapi.Append {
		for i, c := range creations {
			last[c.Identifier] = i
		}
	}
	stored := make([]taskapi.Creation, 0, len(creations))
	states := make([]int16, 0, len(creations))
	for i, c := range creations {
		state := taskapi.Ready
		if c.Suspended {
			state = taskapi.Suspended
		}
		if j, ok := last[c.Identifier]; ok && j != i {
			if insertion == taskapi.Delete {
				continue
			}
			state = taskapi.Redundant
		}
		stored = append(stored, c)
		states = append(states, int16(state))
	}
	return stored, states
}
