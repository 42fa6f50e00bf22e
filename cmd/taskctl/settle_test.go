package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// settle polls n tasks of topic on the database as the given owner, the
// way a consumer would, and completes them with result. It opens the
// database through taskctl's own store, so the test reaches every backend.
func settle(t testing.TB, database, owner, topic string, n int, result taskapi.Result) []taskapi.Task {
	t.Helper()
	return pollAs(t, database, owner, topic, n, &result)
}

// hold polls n tasks of topic on the database as the given owner, as
// settle does, and leaves them ACTIVE. They stay so until owner is
// registered again: the next settle or hold as owner expires them.
func hold(t testing.TB, database, owner, topic string, n int) []taskapi.Task {
	t.Helper()
	return pollAs(t, database, owner, topic, n, nil)
}

// pollAs registers owner, polls n tasks of topic and, unless result is
// nil, completes them with it: all in one transaction of taskctl's store.
func pollAs(t testing.TB, database, owner, topic string, n int, result *taskapi.Result) []taskapi.Task {
	t.Helper()
	tasks := pollUpTo(t, database, owner, topic, n, result)
	if len(tasks) != n {
		t.Fatalf("polled %d tasks of %s as %s, want %d", len(tasks), topic, owner, n)
	}
	return tasks
}

// pollUpTo is pollAs for a poll that may take fewer than n tasks, such as
// a poll of a topic with limits.
func pollUpTo(t testing.TB, database, owner, topic string, n int, result *taskapi.Result) []taskapi.Task {
	t.Helper()
	ctx := context.Background()
	target, err := parseTarget(database)
	if err != nil {
		t.Fatal(err)
	}
	c, err := connect(ctx, target, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	s, err := newStore(c)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []taskapi.Task
	switch b := s.(type) {
	case *backend[taskpg.DB]:
		tasks, err = pollOn(ctx, b, owner, topic, n, result)
	case *backend[taskansi.DB]:
		tasks, err = pollOn(ctx, b, owner, topic, n, result)
	default:
		err = fmt.Errorf("unknown store %T", s)
	}
	if err != nil {
		t.Fatalf("poll %d tasks of %s as %s: %v", n, topic, owner, err)
	}
	return tasks
}

func pollOn[Tx any](ctx context.Context, b *backend[Tx], owner, topic string, n int, result *taskapi.Result) ([]taskapi.Task, error) {
	repo, err := b.newRepo(owner)
	if err != nil {
		return nil, err
	}
	var tasks []taskapi.Task
	err = b.transact(ctx, func(tx Tx) error {
		if _, err := repo.Register(ctx, tx); err != nil {
			return err
		}
		if tasks, err = repo.Poll(ctx, tx, topic, n); err != nil {
			return err
		}
		if result == nil {
			return nil
		}
		completions := make([]taskapi.Completion, len(tasks))
		for i, task := range tasks {
			completions[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: *result, Output: "settled by the test"}}
		}
		return repo.Complete(ctx, tx, topic, completions...)
	})
	return tasks, err
}
