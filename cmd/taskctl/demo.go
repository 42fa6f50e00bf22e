package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/demo"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// demoCommand is 'taskctl demo' (package demo runs it).
func (a *app) demoCommand() *cobra.Command {
	var cfg demo.Config
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run producers and taskproc consumers on demo topics for a few seconds and sum up",
		Long:  demo.Long(),
		Example: `  taskctl demo
  taskctl demo --tasks 20000 --consumers 4 --duration 10s
  taskctl demo --database postgres://postgres@127.0.0.1:5432/postgres
  taskctl demo --json | jq .latency`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Check(); err != nil {
				return usagef("%v", err)
			}
			cfg.Stdout, cfg.Stderr, cfg.JSON = a.stdout, a.stderr, a.json
			if a.database != "" {
				cfg.Named = "--database or $" + databaseEnv
			}
			if err := checkListenURL(a.database, cfg.ListenURL); err != nil {
				return err
			}
			s, _, _, err := a.openMigrated(cmd.Context())
			if err != nil {
				return err
			}
			return runDemo(cmd.Context(), s, cfg)
		},
	}
	flags := c.Flags()
	flags.IntVarP(&cfg.Tasks, "tasks", "n", 5000, "how many tasks to push in all, shared among the topics")
	flags.IntVarP(&cfg.Consumers, "consumers", "c", 3, "how many consumers (taskproc Clients, an owner each) to run")
	flags.DurationVar(&cfg.Spread, "duration", 5*time.Second, "how long the producers push")
	flags.DurationVar(&cfg.Timeout, "timeout", time.Minute, "how long after --duration the tasks may take to settle before the demo gives up")
	flags.StringVar(&cfg.ListenURL, "listen-url", "", "PostgreSQL: where the consumers LISTEN, straight to the server or through a pooler in session mode, when --database goes through PgBouncer in transaction mode")
	return c
}

// runDemo runs the demo on the database of s, one of taskctl's own
// stores.
func runDemo(ctx context.Context, s store, cfg demo.Config) error {
	switch b := s.(type) {
	case *backend[taskpg.DB]:
		return demoOn(ctx, b, cfg)
	case *backend[taskansi.DB]:
		return demoOn(ctx, b, cfg)
	}
	return fmt.Errorf("the demo runs on taskctl's own stores, not on %T", s)
}

// demoOn runs the demo on b's database.
func demoOn[Tx any](ctx context.Context, b *backend[Tx], cfg demo.Config) error {
	db := demo.Database[Tx]{
		Store: b, DB: b.db, Repo: b.repo, Transact: b.transact,
		NewRepo: func(owner string) (demo.Repository[Tx], error) { return b.newRepo(owner) },
		Dialect: b.conn.dialect, Pool: b.conn.pool, SQL: b.conn.db,
	}
	return demo.Run(ctx, db, cfg)
}

// checkListenURL refuses a --listen-url that is not a PostgreSQL URL, or
// that comes with a database other than PostgreSQL.
func checkListenURL(database, listen string) error {
	if listen == "" {
		return nil
	}
	if t, err := parseTarget(database); err == nil && t.dialect != migrations.Postgres {
		return usagef("--listen-url is for PostgreSQL: %s has no LISTEN", t.shown)
	}
	if _, err := pgxpool.ParseConfig(listen); err != nil {
		return usagef("bad --listen-url: %v", redactErr(err, listen))
	}
	return nil
}
