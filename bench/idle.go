package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

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
// the server spends on it: what a fleet of idle consumers costs. taskproc
// and tuned River run the scale's rounds in alternating order; the median
// of each figure counts.
func runIdle(ctx context.Context, b *bench) error {
	proc := func(pool *pgxpool.Pool) (func() error, error) {
		if _, err := setupTaskrepo(ctx, pool); err != nil {
			return nil, err
		}
		cfg := b.scale.proc
		cfg.clients = 1
		run, err := newProcRun(pool, cfg, 0, nil, nil, nil)
		if err != nil {
			return nil, err
		}
		return run.stop, run.start(ctx)
	}
	river := func(t riverTuning) func(pool *pgxpool.Pool) (func() error, error) {
		return func(pool *pgxpool.Pool) (func() error, error) {
			if err := setupRiver(ctx, pool); err != nil {
				return nil, err
			}
			client, err := newRiverClient(pool, t, nil, nil)
			if err != nil {
				return nil, err
			}
			return func() error { stopRiver(client); return nil }, client.Start(ctx)
		}
	}
	var rounds [2][]idling
	for i := range b.scale.rounds {
		for _, s := range order(i, 2) {
			start, side := proc, "taskproc"
			if s == 1 {
				start, side = river(riverTuned), "river"
			}
			idle, err := b.idleSide(ctx, side, start)
			if err != nil {
				return err
			}
			rounds[s] = append(rounds[s], idle)
		}
	}
	defaults, err := b.idleSide(ctx, "river-defaults", river(riverDefaults))
	if err != nil {
		return err
	}
	b.reportIdle(medianIdle(rounds[0]), medianIdle(rounds[1]), defaults)
	return nil
}

// medianIdle returns the median of each figure of the rounds.
func medianIdle(rounds []idling) idling {
	var statements, cpu []float64
	for _, r := range rounds {
		statements, cpu = append(statements, r.statements), append(cpu, r.cpu)
	}
	return idling{statements: medianOf(statements), cpu: medianOf(cpu)}
}

// reportIdle adds the idle figures.
func (b *bench) reportIdle(proc, river, defaults idling) {
	window := b.scale.idle.String()
	rounds := ""
	if b.scale.rounds > 1 {
		rounds = fmt.Sprintf("; taskproc and River: median of %d rounds in alternating order", b.scale.rounds)
	}
	b.report.add(Figure{Key: "idle_statements", Name: "idle for " + window + ": statements per second (1 process, 1 topic)",
		Unit: "stmt/s", Lower: true, Taskrepo: value(proc.statements), River: value(river.statements),
		RiverDefaults: value(defaults.statements), Ceiling: idleCeiling,
		Note: "every statement the server receives from the process, read off the wire of its connections " +
			"(Query and Execute messages: BEGIN and COMMIT included, the LISTEN connection's pings too); taskproc: " +
			b.scale.proc.String() + "; River: " + riverTuned.String() + "; River defaults: " + riverDefaults.String() + rounds})
	b.report.add(Figure{Key: "idle_cpu", Name: "idle for " + window + ": server CPU per second", Unit: "ms", Lower: true,
		Taskrepo: value(proc.cpu), River: value(river.cpu), RiverDefaults: value(defaults.cpu),
		Note: "CPU of the scenario database's server processes (/proc), the LISTEN connections included" + rounds})
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
	meter, err := startCost(ctx, pool)
	if err != nil {
		return idling{}, err
	}
	wire := wireOf(pool)
	first := wire.read()
	began := time.Now()
	if !sleepFor(ctx, b.scale.idle) {
		return idling{}, ctx.Err()
	}
	sent := wire.since(first).statements
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
