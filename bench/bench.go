package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// scenario is one family of measurements, selectable with --only.
type scenario struct {
	name string
	run  func(ctx context.Context, b *bench) error
	// optIn runs it only when --only names it.
	optIn bool
}

// scenarios in the order they run.
var scenarios = []scenario{
	{name: "bulk", run: runBulk},
	{name: "replace", run: runReplace},
	{name: "single", run: runSingle},
	{name: "capacity", run: runCapacity},
	{name: "burndown", run: runBurndown},
	{name: "traps", run: runTraps},
	{name: "growth", run: runGrowth},
	{name: "continuous", run: runContinuous},
	{name: "idle", run: runIdle},
	{name: "sizing", run: runSizing, optIn: true},
	{name: "limits", run: runLimits, optIn: true},
	{name: "renderer", run: runRenderer, optIn: true},
}

func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

// poolSize is the number of connections of every scenario's pool: enough for
// the consumers and producers of either side.
const poolSize = 16

// bench holds what the scenarios share: the server, the scale and the report.
type bench struct {
	admin     *pgx.Conn // to the URL's own database; creates and drops the others
	url       string
	scale     scale
	onlyPaces []string // the continuous runs to make; empty: all
	report    *Report
	pgss      string // why pg_stat_statements cannot be read; "" when it can
	// The empty-table burn-downs, which traps and growth compare with;
	// nil until the burndown scenario ran.
	burn, riverBurn *result
}

func newBench(ctx context.Context, cfg config) (*bench, error) {
	admin, err := pgx.Connect(ctx, cfg.database)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redact(cfg.database), err)
	}
	b := &bench{admin: admin, url: cfg.database, scale: cfg.scale, onlyPaces: cfg.paces, pgss: statementsAvailable(ctx, admin)}
	b.report, err = newReport(ctx, admin, cfg)
	if err != nil {
		_ = admin.Close(ctx)
		return nil, err
	}
	return b, nil
}

func (b *bench) close() { _ = b.admin.Close(context.Background()) }

// fresh creates an empty database for one side of a scenario and returns a
// pool on it and a function that closes the pool and drops the database.
func (b *bench) fresh(ctx context.Context, scenario, side string) (*pgxpool.Pool, func(), error) {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := fmt.Sprintf("bench_%s_%s_%s", scenario, side, hex.EncodeToString(suffix))
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+quoted); err != nil {
		return nil, nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := b.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "bench: drop database %s: %v\n", name, err)
		}
	}
	pcfg, err := pgxpool.ParseConfig(b.url)
	if err != nil {
		drop()
		return nil, nil, err
	}
	pcfg.ConnConfig.Database = name
	pcfg.MaxConns = poolSize
	wire := &wireCounter{} // see runIdle and statements.go
	wireCounters.Store(name, wire)
	pcfg.ConnConfig.DialFunc = wire.dial(pcfg.ConnConfig.DialFunc)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		drop()
		return nil, nil, err
	}
	b.enableStatements(ctx, pool)
	return pool, func() { pool.Close(); drop(); wireCounters.Delete(name) }, nil
}

// redact hides the password of a URL for messages.
func redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "the database"
	}
	return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// side runs one side of a scenario in a fresh database.
func (b *bench) side(ctx context.Context, scenario, side string, run func(pool *pgxpool.Pool) (result, error)) (result, error) {
	pool, drop, err := b.fresh(ctx, scenario, side)
	if err != nil {
		return result{}, err
	}
	defer drop()
	r, err := run(pool)
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", side, err)
	}
	fmt.Fprintf(os.Stderr, "   %-14s %8d tasks in %7.2fs = %9.0f tasks/s %s\n", side, r.tasks, r.elapsed.Seconds(), r.rate(), r.note)
	return r, nil
}
