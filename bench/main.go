// Command bench measures taskrepo (taskpg) against River on one PostgreSQL
// server: bulk and single pushes, a burn-down of a full queue, continuous
// load flat out and paced, the burn-down next to 2M old rows, the poll traps
// (no statistics, stale statistics, autovacuum behind) and the server's cost
// per task. Every scenario runs in a database of its own, created for it and
// dropped afterwards, taskrepo first and River second, never both at once.
//
//	cd bench && go run . [--quick] [--database URL] [--only bulk,single,...]
//
// It prints one table (taskrepo, River, the ratio and the target),
// writes the same as JSON, draws a bar chart and compares with a baseline.
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

// defaultDatabase is the server used when neither --database nor
// TASK_BENCH_POSTGRES_URL names one.
const defaultDatabase = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// config holds the command line.
type config struct {
	database string
	quick    bool
	only     []string
	json     string
	chart    string
	baseline string
	strict   bool
	notes    string
	replay   string
	markdown string
	scale    scale
}

// scale holds the sizes of the scenarios.
type scale struct {
	bulk, single, burn, growthOld int           // tasks
	continuous                    time.Duration // length of each continuous run
	pacedRate                     int           // tasks/s of the paced run
	consumers, producers          int           // continuous and burn-down
	singleProducers               int           // concurrent single pushes
	bulkRounds, singleRounds      int           // rounds of bulk and single pushes, the median reported
	riverWorkers                  int           // River's MaxWorkers for burn-downs
	riverLatencyWorkers           int           // River's MaxWorkers for continuous runs
	timeout                       time.Duration // longest burn-down before it is cut short
}

// fullScale is the scale of the issue; quickScale runs in under a minute.
var (
	fullScale = scale{
		bulk: 200_000, single: 5_000, burn: 200_000, growthOld: 2_000_000,
		continuous: 20 * time.Second, pacedRate: 10_000,
		consumers: 4, producers: 2, singleProducers: 8, bulkRounds: 3, singleRounds: 5,
		riverWorkers: 2000, riverLatencyWorkers: 1000, timeout: 3 * time.Minute,
	}
	quickScale = scale{
		bulk: 20_000, single: 1_000, burn: 10_000, growthOld: 100_000,
		continuous: 2 * time.Second, pacedRate: 10_000,
		consumers: 4, producers: 2, singleProducers: 8, bulkRounds: 1, singleRounds: 1,
		riverWorkers: 2000, riverLatencyWorkers: 1000, timeout: 4 * time.Second,
	}
)

func main() {
	cfg := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() config {
	var cfg config
	var only string
	database := os.Getenv("TASK_BENCH_POSTGRES_URL")
	if database == "" {
		database = defaultDatabase
	}
	flag.StringVar(&cfg.database, "database", database, "PostgreSQL URL of the server (default $TASK_BENCH_POSTGRES_URL); its database is only used to create the scenario databases")
	flag.BoolVar(&cfg.quick, "quick", false, "scale everything down for a smoke run of under a minute")
	flag.StringVar(&only, "only", "", "comma-separated scenarios to run: "+strings.Join(scenarioNames(), ","))
	flag.StringVar(&cfg.json, "json", "results/latest.json", "where to write the results as JSON (empty: nowhere)")
	flag.StringVar(&cfg.chart, "chart", "results/latest.png", "where to draw the bar chart as PNG (empty: nowhere)")
	flag.StringVar(&cfg.baseline, "baseline", "results/baseline.json", "results of the last accepted run to compare with (skipped when missing)")
	flag.BoolVar(&cfg.strict, "strict", false, "exit non-zero when a taskrepo figure is more than 10% worse than the baseline")
	flag.StringVar(&cfg.notes, "notes", "", "free text recorded in the JSON (e.g. what else ran on the machine)")
	flag.StringVar(&cfg.markdown, "markdown", "", "also write the table as Markdown to this file (for README)")
	flag.StringVar(&cfg.replay, "replay", "", "measure nothing: print, chart and compare the results of this JSON file")
	flag.Parse()
	cfg.scale = fullScale
	if cfg.quick {
		cfg.scale = quickScale
	}
	if only != "" {
		cfg.only = strings.Split(only, ",")
	}
	return cfg
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
	b, err := newBench(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.close()
	started := time.Now()
	for _, s := range scenarios {
		if len(cfg.only) > 0 && !slices.Contains(cfg.only, s.name) {
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
