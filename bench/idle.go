package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// idleWarmUp is how long a started consumer runs before the idle window
// opens: its start-up (registration, LISTEN, the first polls) is not idling.
const idleWarmUp = 2 * time.Second

// idleCeiling is the most statements per second that one idle process may
// send per topic.
const idleCeiling = 2

// idling is what one side cost the server while it had nothing to do.
type idling struct {
	statements float64 // per second
	cpu        float64 // ms of server CPU per second; NaN when unknown
}

// runIdle starts one consumer process of each side on an empty topic and
// counts, over the scale's idle window, the statements it sends and the CPU
// the server spends on it: what a fleet of idle consumers costs.
func runIdle(ctx context.Context, b *bench) error {
	proc, err := b.idleSide(ctx, "taskproc", func(pool *pgxpool.Pool) (func() error, error) {
		if _, err := setupTaskrepo(ctx, pool); err != nil {
			return nil, err
		}
		cfg := b.scale.proc
		cfg.clients = 1
		run, err := newProcRun(pool, cfg, 0, nil, nil)
		if err != nil {
			return nil, err
		}
		return run.stop, run.start(ctx)
	})
	if err != nil {
		return err
	}
	var river [2]idling
	for i, t := range []riverTuning{riverTuned, riverDefaults} {
		river[i], err = b.idleSide(ctx, "river", func(pool *pgxpool.Pool) (func() error, error) {
			if err := setupRiver(ctx, pool); err != nil {
				return nil, err
			}
			client, err := newRiverClient(pool, t, nil)
			if err != nil {
				return nil, err
			}
			return func() error { stopRiver(client); return nil }, client.Start(ctx)
		})
		if err != nil {
			return err
		}
	}
	window := b.scale.idle.String()
	b.report.add(Figure{Key: "idle_statements", Name: "idle for " + window + ": statements per second (1 process, 1 topic)",
		Unit: "stmt/s", Lower: true, Taskrepo: value(proc.statements), River: value(river[0].statements),
		RiverDefaults: value(river[1].statements), Ceiling: idleCeiling,
		Note: "every statement a consumer process sends, BEGIN and COMMIT included, counted by a pgx tracer on its pool; taskproc: " +
			b.scale.proc.String() + "; River: " + riverTuned.String() + "; River defaults: " + riverDefaults.String()})
	b.report.add(Figure{Key: "idle_cpu", Name: "idle for " + window + ": server CPU per second", Unit: "ms", Lower: true,
		Taskrepo: value(proc.cpu), River: value(river[0].cpu), RiverDefaults: value(river[1].cpu),
		Note: "CPU of the scenario database's server processes (/proc), the LISTEN connections included"})
	return nil
}

// idleSide starts a side's consumer in a fresh database with start, lets it
// warm up, and measures it idling for the scale's window; then it stops it.
func (b *bench) idleSide(ctx context.Context, side string, start func(pool *pgxpool.Pool) (stop func() error, err error)) (idling, error) {
	pool, drop, err := b.fresh(ctx, "idle", side)
	if err != nil {
		return idling{}, err
	}
	defer drop()
	stop, err := start(pool)
	if err != nil {
		if stop != nil {
			err = errors.Join(err, stop())
		}
		return idling{}, fmt.Errorf("%s: %w", side, err)
	}
	idle, err := b.idleWindow(ctx, pool)
	if err = errors.Join(err, stop()); err != nil {
		return idling{}, fmt.Errorf("%s: %w", side, err)
	}
	fmt.Fprintf(os.Stderr, "   %-14s %8.2f statements/s, %6.2f ms of server CPU per second, idle\n", side, idle.statements, idle.cpu)
	return idle, nil
}

// idleWindow waits out the warm-up and then measures the window.
func (b *bench) idleWindow(ctx context.Context, pool *pgxpool.Pool) (idling, error) {
	if !sleepFor(ctx, idleWarmUp) {
		return idling{}, ctx.Err()
	}
	counter := statementsOf(pool)
	meter, err := startCost(ctx, pool)
	if err != nil {
		return idling{}, err
	}
	first := counter.n.Load()
	began := time.Now()
	if !sleepFor(ctx, b.scale.idle) {
		return idling{}, ctx.Err()
	}
	sent := counter.n.Load() - first
	elapsed := time.Since(began).Seconds()
	c, err := meter.stop(ctx)
	if err != nil {
		return idling{}, err
	}
	// The meter's own queries go through the pool too, before and after
	// the window's counts: they are not counted.
	return idling{statements: float64(sent) / elapsed, cpu: c.CPUSeconds * 1000 / elapsed}, nil
}

// sleepFor waits d or until ctx ends, and reports whether ctx goes on.
func sleepFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// statementCounter is a pgx tracer that counts the statements sent on the
// connections of a pool: queries and executions (BEGIN and COMMIT among
// them), each statement of a batch, and COPYs.
type statementCounter struct{ n atomic.Int64 }

var (
	_ pgx.QueryTracer    = (*statementCounter)(nil)
	_ pgx.BatchTracer    = (*statementCounter)(nil)
	_ pgx.CopyFromTracer = (*statementCounter)(nil)
)

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.n.Add(1)
}

func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (c *statementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// statementsOf returns the counter of a pool made by bench.fresh.
func statementsOf(pool *pgxpool.Pool) *statementCounter {
	if c, ok := pool.Config().ConnConfig.Tracer.(*statementCounter); ok {
		return c
	}
	return &statementCounter{} // never: fresh sets one
}
