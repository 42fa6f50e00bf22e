package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
)

// databaseEnv names the database when --database is not given, and
// readDatabaseEnv the one for reads when --read-database is not.
const (
	databaseEnv     = "TASKREPO_DATABASE_URL"
	readDatabaseEnv = "TASKREPO_READ_DATABASE_URL"
)

// app is one run of taskctl: its streams, its global flags and the store
// it opened.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	database       string  // --database
	readDatabase   string  // --read-database: where the commands that only read read
	json           bool    // --json
	stores         []store // opened by open and openReads, closed when the run ends
	started        bool    // a command's own code ran: later errors are not usage errors
	limits                 // of the connections: serve bounds its pool (--pool)
}

// run runs taskctl with args and returns its exit code. Errors are printed
// on stderr as one line, never as a stack trace.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "taskctl: internal error: %v\n", v)
			if os.Getenv("TASKCTL_DEBUG") != "" {
				_, _ = stderr.Write(debug.Stack())
			}
			code = exitFailure
		}
	}()
	root := a.command()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.closeStores()
	if err == nil {
		return exitOK
	}
	if !a.started { // cobra refused the command line before any command ran
		err = &exitError{code: exitUsage, err: err}
	}
	fmt.Fprintf(stderr, "taskctl: %v\n", err)
	if !a.started {
		fmt.Fprintln(stderr, "Run 'taskctl --help' for usage.")
	}
	return exitCode(err)
}

// command returns the root command with every subcommand.
func (a *app) command() *cobra.Command {
	root := &cobra.Command{
		Use:   "taskctl",
		Short: "Operate a taskrepo database: topics, tasks, owners, a live view, a web dashboard and a demo",
		Long: `taskctl operates a taskrepo task repository on PostgreSQL, MySQL/MariaDB or SQLite.

The database is chosen by the scheme of --database or $` + databaseEnv + `:
  postgres://user@host:5432/db   PostgreSQL, through taskpg
  mysql://user:pass@host:3306/db MySQL or MariaDB, through taskansi
  sqlite:path/to/file.db         an embedded SQLite file, through taskansi
With neither, taskctl uses the SQLite file taskrepo.db in the current directory.

The commands that only read (list, show, count, results, resolve, audit,
owners list, topic list, topic capacity and topic limits without a change,
top, and serve's pages) read from --read-database or
$` + readDatabaseEnv + ` when it is given, a hot standby say, in read-only
transactions; every other command, and serve's actions, use --database.

Exit codes: 0 success, 1 the operation failed, 2 bad usage or input,
3 the database cannot be reached or has no schema, 4 unknown topic or task,
5 declined at a confirmation prompt, 130 interrupted.`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRun:  func(*cobra.Command, []string) { a.started = true },
	}
	flags := root.PersistentFlags()
	flags.StringVarP(&a.database, "database", "d", os.Getenv(databaseEnv),
		"database URL (postgres://, mysql://, sqlite:FILE); default $"+databaseEnv+", else sqlite:"+defaultFile)
	flags.StringVar(&a.readDatabase, "read-database", os.Getenv(readDatabaseEnv),
		"database URL of the commands that only read, a hot standby say (see above); default $"+readDatabaseEnv)
	flags.BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.AddGroup(
		&cobra.Group{ID: "setup", Title: "Set-up:"},
		&cobra.Group{ID: "read", Title: "Reading:"},
		&cobra.Group{ID: "change", Title: "Changing tasks:"},
		&cobra.Group{ID: "watch", Title: "Watching and demonstrating:"},
	)
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	return root
}

// commands returns the subcommands, each with its group.
func (a *app) commands() []*cobra.Command {
	grouped := map[string][]*cobra.Command{
		"setup":  {a.migrateCommand(), a.topicCommand(), a.ownersCommand(), a.expireCommand()},
		"read":   {a.listCommand(), a.showCommand(), a.countCommand(), a.resultsCommand(), a.resolveCommand(), a.auditCommand()},
		"change": {a.pushCommand(), a.reviveCommand(), a.reassignCommand(), a.deferCommand(), a.cancelCommand(), a.purgeCommand()},
		"watch":  {a.topCommand(), a.serveCommand(), a.demoCommand()},
	}
	var all []*cobra.Command
	for group, cmds := range grouped {
		for _, c := range cmds {
			c.GroupID = group
			all = append(all, c)
		}
	}
	return all
}
