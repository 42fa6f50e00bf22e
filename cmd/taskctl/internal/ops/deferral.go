package ops

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// DeferBatch is how many tasks one transaction of a deferral over a span
// changes: more than Batch, since a deferral of READY tasks names them by
// runs of sequences, mostly one run per page, and each page costs a read
// and a transaction (40,000 tasks on PostgreSQL: 1.1 to 1.8 s in pages of
// 1,000, 0.85 s in pages of 5,000).
const DeferBatch = 5 * Batch

// Deferral is what a deferral did: the tasks it deferred, and the tasks
// it left as they were because they were due later already. A deferral
// never brings a task sooner; until now (the zero time) does, as it says.
type Deferral struct {
	Deferred, Later int64
}

// DeferSpan defers every READY task of topic within span until until (zero:
// pollable at once), DeferBatch tasks a transaction, leaving out those that
// consumers claim meanwhile and those due later than until already.
func DeferSpan(ctx context.Context, s Store, topic string, until time.Time, span taskapi.Range) (Deferral, error) {
	var d Deferral
	err := eachReady(ctx, s, topic, span, func(infos []taskapi.Info) error {
		page, err := DeferInfos(ctx, s, topic, until, infos)
		d.Deferred, d.Later = d.Deferred+page.Deferred, d.Later+page.Later
		return err
	})
	return d, err
}

// LaterIn counts the READY tasks of topic within span that a deferral
// until until would leave as they are, due later already, among those it
// reads before ctx ends: how many, how many READY tasks it read, and
// whether it read them all (a confirmation's count within its budget).
func LaterIn(ctx context.Context, s Store, topic string, until time.Time, span taskapi.Range) (later, read int64, all bool, err error) {
	err = eachReady(ctx, s, topic, span, func(infos []taskapi.Info) error {
		_, n := Movable(infos, until)
		later, read = later+n, read+int64(len(infos))
		return nil
	})
	return later, read, err == nil, err
}

// eachReady hands fn the READY tasks of topic within span, a page of
// DeferBatch at a time, in sequence order, until fn fails or a read does.
func eachReady(ctx context.Context, s Store, topic string, span taskapi.Range, fn func([]taskapi.Info) error) error {
	ready := taskapi.Listing{States: []taskapi.State{taskapi.Ready}}
	for cursor := span.From - 1; ; {
		infos, err := s.Page(ctx, topic, ready, max(cursor, taskapi.Inception), DeferBatch, taskapi.Forward)
		if err != nil {
			return err
		}
		infos = slices.DeleteFunc(infos, func(info taskapi.Info) bool { return info.Sequence > span.To })
		if err := fn(infos); err != nil || len(infos) < DeferBatch {
			return err
		}
		cursor = infos[len(infos)-1].Sequence
	}
}

// DeferInfos defers the tasks of infos, READY when read, until until,
// leaving out those due later than until already and those a consumer
// claimed meanwhile.
func DeferInfos(ctx context.Context, s Store, topic string, until time.Time, infos []taskapi.Info) (Deferral, error) {
	tasks, later := Movable(infos, until)
	n, err := DeferReady(ctx, s, topic, until, tasks)
	return Deferral{Deferred: int64(n), Later: later}, err
}

// Movable returns the tasks of infos that a deferral until until moves,
// and how many READY ones it leaves as they are, due later already.
func Movable(infos []taskapi.Info, until time.Time) (tasks []taskapi.Task, later int64) {
	for _, info := range infos {
		if dueLater(info, until) {
			later++
			continue
		}
		tasks = append(tasks, info.Task)
	}
	return tasks, later
}

// dueLater says whether a deferral until until leaves info as it is: a
// READY task due later already. until zero (now) leaves none.
func dueLater(info taskapi.Info, until time.Time) bool {
	return info.State == taskapi.Ready && !until.IsZero() && info.NotBefore.After(until)
}

// DeferReady defers tasks that were READY when paged, leaving out those a
// consumer claimed meanwhile (the StateError names them), and returns how
// many it deferred.
func DeferReady(ctx context.Context, s Store, topic string, until time.Time, tasks []taskapi.Task) (int, error) {
	for len(tasks) > 0 {
		err := s.Defer(ctx, topic, until, tasks)
		var stateErr *taskapi.StateError
		if !errors.As(err, &stateErr) {
			return len(tasks), err
		}
		before := len(tasks)
		tasks = slices.DeleteFunc(tasks, func(t taskapi.Task) bool {
			return slices.Contains(stateErr.Sequences, t.Sequence)
		})
		if len(tasks) == before {
			return 0, err
		}
	}
	return 0, nil
}
