package taskpg

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Poll marks up to size Ready tasks of topic Active with this owner, in one
// statement, and returns them in poll order. A conditional poll first takes
// the topic's advisory lock (see the package documentation).
func (r *Repository) Poll(ctx context.Context, db DB, topic string, size int, opts ...taskapi.PollOption) ([]taskapi.Task, error) {
	order, condition, err := check.Poll(topic, opts)
	if err != nil {
		return nil, wrapf(err, "poll %q", topic)
	}
	if size < 1 {
		return nil, nil
	}
	tasks, err := r.poll(ctx, db, topic, size, order, condition)
	if err == nil && len(tasks) == 0 {
		err = r.mustExist(ctx, db)
	}
	if err != nil {
		return nil, wrapf(err, "poll %q", topic)
	}
	slices.SortFunc(tasks, func(a, b taskapi.Task) int {
		if order == taskapi.LIFO {
			a, b = b, a
		}
		return cmp.Compare(a.Sequence, b.Sequence)
	})
	return tasks, nil
}

func (r *Repository) poll(ctx context.Context, db DB, topic string, size int, order taskapi.Order, condition taskapi.Condition) ([]taskapi.Task, error) {
	if condition == taskapi.Unconditional {
		// QueryExecModeExec plans every poll for its values and the table
		// as it is now: a cached generic plan, made while the partition was
		// small and had no statistics, scanned it sequentially ever after
		// (the bench's paced run fell to half of River's rate).
		rows, _ := db.Query(ctx, r.q.poll[order][0], pgx.QueryExecModeExec, topic, r.owner, size)
		return pgx.CollectRows(rows, scanTask)
	}
	blocking := ordinals(append([]taskapi.State{taskapi.Active}, condition.Blocking()...))
	if conn, release, ok := pgConn(ctx, db); ok {
		defer release()
		return r.pollLocked(ctx, conn, topic, size, r.q.poll[order][1], blocking)
	}
	var tasks []taskapi.Task
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, r.q.pollLock, r.lockKey(topic)); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, r.q.poll[order][1], pgx.QueryExecModeExec, topic, r.owner, size, blocking)
		var err error
		tasks, err = pgx.CollectRows(rows, scanTask)
		return err
	})
	return tasks, err
}

// pollLocked takes the topic's advisory lock and runs the conditional poll
// query in one round trip: two statements in a pipeline that ends in one
// Sync. Outside a transaction they share an implicit one, which holds the
// lock until the poll is committed, and the poll's snapshot is taken once
// the lock is held. Both are unnamed statements, planned per call like the
// unconditional poll; a pgx.Batch would run them from prepared statements,
// whose generic plan PostgreSQL keeps once it has chosen it.
func (r *Repository) pollLocked(ctx context.Context, conn *pgconn.PgConn, topic string, size int, query string, blocking []int16) ([]taskapi.Task, error) {
	b := &pgconn.Batch{}
	b.ExecParams(r.q.pollLock, [][]byte{[]byte(r.lockKey(topic))}, nil, nil, nil)
	b.ExecParams(query, [][]byte{[]byte(topic), []byte(r.owner), strconv.AppendInt(nil, int64(size), 10), arrayText(blocking)}, nil, nil, nil)
	results, err := conn.ExecBatch(ctx, b).ReadAll()
	if err != nil {
		return nil, err
	}
	rows := results[len(results)-1].Rows
	tasks := make([]taskapi.Task, len(rows))
	for i, row := range rows { // in text format: sequence, identifier, input
		if tasks[i].Sequence, err = strconv.ParseInt(string(row[0]), 10, 64); err != nil {
			return nil, fmt.Errorf("sequence %q: %w", row[0], err)
		}
		tasks[i].Identifier, tasks[i].Input = string(row[1]), string(row[2])
	}
	return tasks, nil
}

// lockKey is the text whose hash keys the advisory lock of a topic's
// conditional polls, shared with taskansi.
func (r *Repository) lockKey(topic string) string {
	return r.schema + "." + topic
}

// pgConn returns the connection under db, idle between statements, and a
// function that hands it back; false for a DB that is none of pgx's.
func pgConn(ctx context.Context, db DB) (*pgconn.PgConn, func(), bool) {
	switch db := db.(type) {
	case *pgxpool.Pool:
		c, err := db.Acquire(ctx)
		if err != nil {
			return nil, nil, false // the fallback reports the error
		}
		return c.Conn().PgConn(), c.Release, true
	case *pgx.Conn:
		return db.PgConn(), func() {}, true
	case interface{ Conn() *pgx.Conn }: // pgx.Tx
		return db.Conn().PgConn(), func() {}, true
	}
	return nil, nil, false
}

// arrayText writes ordinals as a PostgreSQL array literal.
func arrayText(ords []int16) []byte {
	b := []byte{'{'}
	for i, o := range ords {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(o), 10)
	}
	return append(b, '}')
}

// mustExist returns ErrUnknownOwner unless this owner is registered.
func (r *Repository) mustExist(ctx context.Context, db DB) error {
	var exists bool
	if err := db.QueryRow(ctx, r.q.ownerExists, r.owner).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("owner %q: %w", r.owner, taskapi.ErrUnknownOwner)
	}
	return nil
}

func scanTask(row pgx.CollectableRow) (taskapi.Task, error) {
	var t taskapi.Task
	err := row.Scan(&t.Sequence, &t.Identifier, &t.Input)
	return t, err
}

// Complete records the decisions in one statement that writes only when every
// task is Active and owned by this owner.
func (r *Repository) Complete(ctx context.Context, db DB, topic string, completions ...taskapi.Completion) error {
	if err := check.Completions(topic, completions); err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	if len(completions) == 0 {
		return nil
	}
	los, his, states, outputs, named := completeArgs(completions)
	// Planned per call, like the poll: see Repository.poll.
	tag, err := db.Exec(ctx, r.q.complete, pgx.QueryExecModeExec, topic, los, his, states, outputs, r.owner, named)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("%d tasks, not all Active and owned by %q: %w", named, r.owner, taskapi.ErrNotActive)
	}
	if err != nil {
		return wrapf(err, "complete tasks of %q", topic)
	}
	return nil
}

// completeArgs returns the arguments of the complete statement: the runs of
// consecutive sequences with one decision, as arrays of their bounds, states
// and outputs, and the number of tasks named. When a task is named twice,
// the more severe result wins, and on a tie the later output.
func completeArgs(completions []taskapi.Completion) (los, his []int64, states []int16, outputs []string, named int) {
	runs, named := batch.Decisions(completions)
	los, his = make([]int64, len(runs)), make([]int64, len(runs))
	states, outputs = make([]int16, len(runs)), make([]string, len(runs))
	for i, run := range runs {
		los[i], his[i] = run.Range.From, run.Range.To
		states[i], outputs[i] = int16(run.Key.Result.State()), run.Key.Output
	}
	return los, his, states, outputs, named
}
