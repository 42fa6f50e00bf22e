// Command bench measures taskrepo (taskpg) against River on one PostgreSQL
// server: bulk and single pushes (with wake-ups and without), a burn-down of
// a full queue, continuous load flat out and paced (1,000 and 100 tasks/s,
// one task per push) with latencies from the push and from its commit, the
// statements of a task's life (pg_stat_statements), the burn-down next to 2M old rows, the poll traps (no statistics,
// stale statistics, autovacuum behind), an idle consumer process's
// statements per second, and the server's cost per task. taskrepo works the
// queue with consumers of its own that poll and complete, and through its
// consumer runtime, taskproc, woken by a taskpg.Notifier; River runs tuned as
// its own benchmark (river bench) runs it, the reference of every ratio, and
// with its default fetch settings. Every scenario runs in a database of its
// own, created for it and dropped afterwards, one side after the other,
// never two at once.
//
//	cd bench && go run . [--quick] [--database URL] [--only bulk,single,...] [--taskproc clients=1,size=500,...] [--wakeups off]
//
// It prints one table (taskrepo, River tuned and with its defaults, the
// ratio and the target), writes the same as JSON, draws a bar chart
// and compares with a baseline.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
)

// config holds the command line.
type config struct {
	database string
	quick    bool
	only     []string
	paces    []string // the continuous runs to make (pace.key); empty: all
	json     string
	chart    string
	baseline string
	strict   bool
	notes    string
	replay   string
	markdown string
	docs     []string // Markdown files whose generated blocks --replay rewrites (docs.go)
	check    bool     // with docs: change nothing, fail when a block differs
	scale    scale
}

// scale holds the sizes of the scenarios.
type scale struct {
	bulk, single, burn, growthOld int           // tasks
	continuous                    time.Duration // length of each continuous run
	idle                          time.Duration // length of the idle window
	rounds                        int           // rounds of burn-down, flat out and idle, the median reported
	consumers, producers          int           // continuous and burn-down
	singleProducers               int           // concurrent single pushes
	bulkRounds, singleRounds      int           // rounds of bulk and single pushes, the median reported
	timeout                       time.Duration // longest burn-down before it is cut short
	proc                          procConfig    // how taskproc runs, in burn-downs and continuous runs
	busy                          int           // tasks of each busy run of the sizing scenario
	topicCounts                   []int         // the numbers of topics the sizing scenario measures
}

// defaultProc is the taskproc configuration of both scales (see --taskproc).
var defaultProc = procConfig{clients: 1, size: 500, buffer: 4, workers: 4, pollers: 1}

// fullScale is the scale of the issue; quickScale runs in under a minute.
var (
	fullScale = scale{
		bulk: 200_000, single: 5_000, burn: 200_000, growthOld: 2_000_000,
		continuous: 20 * time.Second, rounds: 3, idle: 10 * time.Second,
		consumers: 4, producers: 2, singleProducers: 8, bulkRounds: 3, singleRounds: 5,
		timeout: 3 * time.Minute, proc: defaultProc,
		busy: 1_000_000, topicCounts: []int{1, 1000, 5000},
	}
	quickScale = scale{
		bulk: 20_000, single: 1_000, burn: 10_000, growthOld: 100_000,
		continuous: 2 * time.Second, rounds: 1, idle: 2 * time.Second,
		consumers: 4, producers: 2, singleProducers: 8, bulkRounds: 1, singleRounds: 1,
		timeout: 4 * time.Second, proc: defaultProc,
		busy: 50_000, topicCounts: []int{1, 200},
	}
)

func main() {
	cfg, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	var cfg config
	var only, proc, wakeUps string
	flag.StringVar(&cfg.database, "database", os.Getenv("TASK_BENCH_POSTGRES_URL"),
		"PostgreSQL URL of an existing server (default $TASK_BENCH_POSTGRES_URL; neither: the bench starts a server of its own from "+
			postgresBin+"); its database is only used to create the scenario databases")
	flag.BoolVar(&cfg.quick, "quick", false, "scale everything down for a smoke run of under a minute")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run: "+strings.Join(scenarioNames(), ","))
	flag.Func("paces", "comma-separated continuous runs to make (default all): "+strings.Join(paceKeys(), ", "), func(v string) error {
		cfg.paces = append(cfg.paces, strings.Split(v, ",")...)
		return nil
	})
	flag.StringVar(&cfg.json, "json", "results/latest.json", "where to write the results as JSON (empty: nowhere)")
	flag.StringVar(&cfg.chart, "chart", "results/latest.png", "where to draw the bar chart as PNG (empty: nowhere)")
	flag.StringVar(&cfg.baseline, "baseline", "results/baseline.json", "results of the last accepted run to compare with (skipped when missing)")
	flag.BoolVar(&cfg.strict, "strict", false, "exit non-zero when a taskrepo figure is more than 10% worse than the baseline")
	flag.StringVar(&cfg.notes, "notes", "", "free text recorded in the JSON (e.g. what else ran on the machine)")
	flag.StringVar(&cfg.markdown, "markdown", "", "also write the table as Markdown to this file (for the docs)")
	flag.StringVar(&cfg.replay, "replay", "", "measure nothing: print, chart and compare the results of this JSON file")
	flag.Func("docs", "with --replay: comma-separated Markdown files whose <!-- bench:NAME --> blocks are rewritten from the results", func(v string) error {
		cfg.docs = append(cfg.docs, strings.Split(v, ",")...)
		return nil
	})
	flag.BoolVar(&cfg.check, "check", false, "with --docs: change nothing, and fail when a block differs from the results")
	flag.StringVar(&proc, "taskproc", "", "how taskproc runs, over the default "+defaultProc.flag()+
		" (buffer and workers 0: the handler runs on the poll loop; parallel N: Parallel(N) instead of Sequential)")
	flag.StringVar(&wakeUps, "wakeups", "", "wake-ups of every taskrepo repository: off, or the interval of taskpg.WithWakeUps (default: taskpg's)")
	flag.Parse()
	if len(cfg.docs) > 0 && cfg.replay == "" {
		return cfg, fmt.Errorf("--docs needs --replay: the results to write")
	}
	var err error
	if repoOptions, err = parseWakeUps(wakeUps); err != nil {
		return cfg, err
	}
	cfg.scale = fullScale
	if cfg.quick {
		cfg.scale = quickScale
	}
	if only != "" {
		cfg.only = strings.Split(only, ",")
	}
	if proc != "" {
		if cfg.scale.proc, err = parseProcConfig(proc, cfg.scale.proc); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// run runs the chosen scenarios and reports them.
func run(ctx context.Context, cfg config) error {
	if cfg.replay != "" {
		return replay(cfg)
	}
	for _, name := range cfg.only {
		if !slices.Contains(scenarioNames(), name) {
			return fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(scenarioNames(), ","))
		}
	}
	for _, key := range cfg.paces {
		if keys := paceKeys(); !slices.Contains(keys, key) {
			return fmt.Errorf("unknown continuous run %q (have %s)", key, strings.Join(keys, ","))
		}
	}
	own := cfg.database == ""
	if own {
		srv, err := startServer(ctx)
		if err != nil {
			return fmt.Errorf("start the bench's own PostgreSQL: %w", err)
		}
		defer func() { _ = srv.stop() }() // also after Ctrl-C, which ends ctx and so the run
		cfg.database = srv.url()
		fmt.Fprintf(os.Stderr, "own server: PostgreSQL on 127.0.0.1:%d in %s\n", srv.port, srv.dir)
	}
	b, err := newBench(ctx, cfg)
	if err != nil {
		return err
	}
	if own {
		b.report.Notes = append(b.report.Notes, "server: the bench's own, started from "+postgresBin+" with "+strings.Join(append(slices.Clip(serverSettings), alterableSettings...), ", "))
	}
	defer b.close()
	started := time.Now()
	for _, s := range scenarios {
		if !slices.Contains(cfg.only, s.name) && (len(cfg.only) > 0 || s.optIn) {
			continue
		}
		fmt.Fprintf(os.Stderr, "== %s (%s)\n", s.name, time.Since(started).Round(time.Second))
		if err := s.run(ctx, b); err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
	}
	b.report.Duration = time.Since(started).Round(time.Second).String()
	return b.finish(cfg)
}
