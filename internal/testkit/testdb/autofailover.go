package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// autoFailoverNodeSettings are added to the PostgreSQL of both nodes of an
// AutoFailover, tuned or not: no fsync (the tests crash processes, not the
// machine; full_page_writes stays on, which pg_rewind needs); a promoted
// standby that retries its WAL sources every 100 ms instead of 5 s, as
// every server of testdb's own (postgresSettings); and checkpoints that
// do not spread their writes. When pg_rewind fails, a rejoining node
// copies the primary with pg_basebackup, which pg_autoctl runs without
// --checkpoint=fast: with a spread checkpoint, on a loaded machine, one
// such copy waited more than three minutes for the checkpoint.
var autoFailoverNodeSettings = []string{
	"fsync = off",
	"wal_retrieve_retry_interval = '100ms'",
	"checkpoint_completion_target = 0",
}

// autoFailoverTunedMonitor are the monitor's settings of a tuned
// AutoFailover (issue 44): health checks every second with a timeout of a
// second and one retry a second later, a node unhealthy after 2 s of
// failed checks, and a primary that does not answer demoted after 5 s
// instead of 30 (until then the promoted standby stays read-only).
var autoFailoverTunedMonitor = []string{
	"pgautofailover.health_check_period = 1000",
	"pgautofailover.health_check_timeout = 1000",
	"pgautofailover.health_check_max_retries = 1",
	"pgautofailover.health_check_retry_delay = 1000",
	"pgautofailover.node_considered_unhealthy_timeout = 2000",
	"pgautofailover.primary_demote_timeout = 5000",
}

// autoFailoverTunedKeeper are the keepers' settings of a tuned
// AutoFailover (`pg_autoctl config set NAME VALUE`): a primary that lost
// the monitor and its standby for 3 s (instead of 20) considers itself
// partitioned and demotes itself.
var autoFailoverTunedKeeper = [][2]string{
	{"timeout.network_partition_timeout", "3"},
}

// AutoFailover is a pg_auto_failover formation of testdb's own, for t
// alone: a monitor and two PostgreSQL nodes, each run by `pg_autoctl run`
// as a child process of the tests (as the user postgres when they run as
// root), on free ports of 127.0.0.1, without TLS, every local connection
// trusted. With two nodes pg_auto_failover replicates synchronously: the
// primary's commits wait until the standby has them. Crash ends the
// primary's node as a crash of its host would, and the monitor promotes
// the standby; Recover starts the crashed node again, which rejoins as the
// standby; Switchover asks the monitor for a planned switchover. Its
// methods are not safe for concurrent use.
type AutoFailover struct {
	dir     string   // the topology's temporary directory
	owner   *account // who runs pg_autoctl; nil: the current user
	autoctl string   // pg_autoctl
	bin     string   // the bin directory of PostgreSQL's binaries
	tuned   bool
	reaper  *reaper
	monitor *keeper
	nodes   [2]*keeper
	crashed *keeper // the node that Crash ended, until Recover
}

// OwnAutoFailover starts a pg_auto_failover monitor and two nodes with a
// migrated database "tasks", returns when the monitor reports one node
// primary and the other its synchronous secondary, and removes them all
// when t ends. tuned sets the monitor's health checks and the keepers'
// timeouts that bring a failover to some ten seconds (see Settings);
// otherwise pg_auto_failover runs with its defaults. It needs Debian's
// postgresql-15-auto-failover (pg_autoctl and the monitor's extension):
// without it it skips t, or fails it under
// TASK_TEST_REQUIRE_AUTOFAILOVER=1. Setting up takes some ten seconds.
func OwnAutoFailover(t testing.TB, tuned bool) *AutoFailover {
	t.Helper()
	start := func() (*AutoFailover, error) { return newAutoFailover(tuned) }
	return own(t, start, RequireAutoFailoverEnv, "testdb: pg_auto_failover", func(f *AutoFailover) error {
		ctx, cancel := context.WithTimeout(context.Background(), initPatience)
		defer cancel()
		return f.setUp(ctx)
	})
}

// newAutoFailover finds pg_auto_failover's binaries and creates the
// topology's directory, with its reaper, and the directories of
// pg_autoctl's files; it starts nothing.
func newAutoFailover(tuned bool) (*AutoFailover, error) {
	if !ownServersSupported {
		return nil, fmt.Errorf("%w: they run on Linux only", errNoOwnServer)
	}
	autoctl, bin, err := autoFailoverBinaries()
	if err != nil {
		return nil, err
	}
	owner, err := serverAccount("postgres")
	if err != nil {
		return nil, err
	}
	dir, err := serverDir("pgaf")
	if err != nil {
		return nil, err
	}
	f := &AutoFailover{dir: dir, owner: owner, autoctl: autoctl, bin: bin, tuned: tuned,
		monitor: &keeper{name: "monitor", pgdata: filepath.Join(dir, "monitor")}}
	for i := range f.nodes {
		name := "node" + strconv.Itoa(i+1)
		f.nodes[i] = &keeper{name: name, pgdata: filepath.Join(dir, name)}
	}
	if f.reaper, err = startReaper(dir, filepath.Join(f.monitor.pgdata, "postmaster.pid")); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	err = owner.own(dir)
	for _, sub := range []string{"config", "share", "run"} {
		path := filepath.Join(dir, sub)
		err = errors.Join(err, os.Mkdir(path, 0o700), owner.own(path))
	}
	if err != nil {
		return nil, errors.Join(err, f.remove())
	}
	return f, nil
}

// setUp creates and starts the monitor, then the first node, which
// becomes the primary, then the second, which becomes its standby from a
// base backup, and migrates the database "tasks".
func (f *AutoFailover) setUp(ctx context.Context) error {
	if err := f.setUpMonitor(ctx); err != nil {
		return err
	}
	for i, k := range f.nodes {
		if err := f.setUpNode(ctx, k); err != nil {
			return err
		}
		if i == 0 {
			if err := f.awaitStates(ctx, "the first node single", func(s []nodeState) bool {
				return len(s) == 1 && s[0].settled("single")
			}); err != nil {
				return err
			}
		}
	}
	if err := f.awaitHealthy(ctx); err != nil {
		return err
	}
	if err := migrate(ctx, f.URL()); err != nil {
		return fmt.Errorf("migrate the database tasks: %w", err)
	}
	return nil
}

// setUpMonitor creates the monitor's PostgreSQL on a free port, with the
// tuned settings if asked, starts its keeper and waits until it answers.
func (f *AutoFailover) setUpMonitor(ctx context.Context) error {
	k := f.monitor
	var err error
	if k.port, err = freePort(); err != nil {
		return err
	}
	if err := f.autoctlTool(ctx, "create", "monitor", "--pgdata", k.pgdata, "--pgport", strconv.Itoa(k.port),
		"--pgctl", filepath.Join(f.bin, "pg_ctl"), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"); err != nil {
		return err
	}
	// pg_autoctl create monitor has no --listen: the monitor would listen
	// on every address.
	if err := f.autoctlTool(ctx, "config", "set", "--pgdata", k.pgdata, "postgresql.listen_addresses", "127.0.0.1"); err != nil {
		return err
	}
	if f.tuned {
		if err := appendFile(filepath.Join(k.pgdata, "postgresql.conf"), autoFailoverTunedMonitor...); err != nil {
			return err
		}
	}
	if err := f.start(k); err != nil {
		return err
	}
	return f.awaitStates(ctx, "the monitor answering", func([]nodeState) bool { return true })
}

// setUpNode creates the node k on a free port, registered at the monitor
// (the first node initializes a primary, the second a standby from its
// base backup), sets it up and starts its keeper.
func (f *AutoFailover) setUpNode(ctx context.Context, k *keeper) error {
	var err error
	if k.port, err = freePort(); err != nil {
		return err
	}
	if err := f.autoctlTool(ctx, "create", "postgres", "--pgdata", k.pgdata, "--pgport", strconv.Itoa(k.port),
		"--pgctl", filepath.Join(f.bin, "pg_ctl"), "--hostname", "127.0.0.1", "--listen", "127.0.0.1",
		"--name", k.name, "--dbname", "tasks", "--auth", "trust", "--no-ssl", "--monitor", f.monitorURL("autoctl_node")); err != nil {
		return err
	}
	if err := appendFile(filepath.Join(k.pgdata, "postgresql.conf"), autoFailoverNodeSettings...); err != nil {
		return err
	}
	if f.tuned {
		for _, setting := range autoFailoverTunedKeeper {
			if err := f.autoctlTool(ctx, "config", "set", "--pgdata", k.pgdata, setting[0], setting[1]); err != nil {
				return err
			}
		}
	}
	return f.start(k)
}

// URL returns the URL of the database "tasks" on both nodes, as a client
// that follows a failover names it: both hosts, and
// target_session_attrs=read-write, so that pgx connects to whichever is the
// primary and accepts writes; a connection attempt gives up on a node
// after two seconds.
func (f *AutoFailover) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/tasks?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		f.nodes[0].port, f.nodes[1].port)
}

// Addrs returns the host and port of each node, in the order they
// registered: the first node was the first primary.
func (f *AutoFailover) Addrs() []string {
	addrs := make([]string, len(f.nodes))
	for i, k := range f.nodes {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(k.port)
	}
	return addrs
}

// MonitorURL returns the URL of the monitor's database, pg_auto_failover,
// as the superuser.
func (f *AutoFailover) MonitorURL() string { return f.monitorURL("postgres") }

// monitorURL returns the URL of the monitor's database as user.
func (f *AutoFailover) monitorURL(user string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/pg_auto_failover?sslmode=disable", user, f.monitor.port)
}

// Tuned reports whether the formation runs with the tuned settings.
func (f *AutoFailover) Tuned() bool { return f.tuned }

// Settings returns the settings that differ from pg_auto_failover's
// defaults, as NAME = VALUE: the monitor's GUCs and the keepers'
// configuration when tuned, and the nodes' PostgreSQL settings in either
// case.
func (f *AutoFailover) Settings() []string {
	var settings []string
	if f.tuned {
		settings = append(settings, autoFailoverTunedMonitor...)
		for _, s := range autoFailoverTunedKeeper {
			settings = append(settings, "pg_autoctl "+s[0]+" = "+s[1])
		}
	}
	return append(settings, autoFailoverNodeSettings...)
}

// remove stops every keeper and its PostgreSQL, kills whatever of them is
// left, and removes the topology's directory.
func (f *AutoFailover) remove() error {
	var err error
	for _, k := range append(f.nodes[:], f.monitor) {
		if errStop := f.stop(k); errStop != nil {
			err = errors.Join(err, errStop)
		}
	}
	killLeftovers(f.dir, f.reaper.cmd.Process.Pid)
	return errors.Join(err, f.reaper.stop())
}
