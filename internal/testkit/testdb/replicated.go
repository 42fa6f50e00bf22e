package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// standbyName is the application_name of a Replicated pair's standby, which
// the primary's synchronous_standby_names waits for.
const standbyName = "standby"

// replicaPatience bounds the wait for a standby to stream, or a promotion
// to end.
const replicaPatience = 30 * time.Second

// Replicated is a PostgreSQL primary and a hot standby of testdb's own that
// streams its write-ahead log, for t alone. With synchronous replication
// the primary's commits wait until the standby has flushed them, as a
// team that must lose no commit at a failover runs them. Failover kills the
// primary with SIGKILL and promotes the standby; Rejoin makes the dead
// node the new primary's standby again. Its methods are not safe for
// concurrent use.
type Replicated struct {
	nodes   [2]*Cluster
	primary int // index of the primary in nodes
	// synchronous says whether the primary waits for the standby.
	synchronous bool
}

// OwnReplicated starts a primary with a migrated database "tasks" and a
// synchronous standby of it, and removes both when t ends. It skips t like
// OwnPostgres without PostgreSQL's server binaries. Pass synchronous false
// for asynchronous replication: the primary then confirms a commit before
// the standby has it.
func OwnReplicated(t testing.TB, synchronous bool) *Replicated {
	t.Helper()
	primary := OwnPostgres(t)
	r := &Replicated{synchronous: synchronous}
	r.nodes[0] = primary
	standby, err := startCluster(r.standbyKind(primary.kind))
	if err != nil {
		t.Fatalf("testdb: a standby: %v", err)
	}
	standby.url = withDatabase(standby.AdminURL(), "tasks")
	t.Cleanup(func() {
		if err := standby.remove(); err != nil {
			t.Errorf("testdb: %v", err)
		}
	})
	r.nodes[1] = standby
	if err := r.attach(context.Background()); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return r
}

// standbyKind is PostgreSQL as primary runs it, but whose data directory is
// a base backup of the pair's primary at the time, set to follow it.
func (r *Replicated) standbyKind(primary *serverKind) *serverKind {
	kind := *primary
	kind.initialize = func(ctx context.Context, c *Cluster) error { return r.baseBackup(ctx, c) }
	return &kind
}

// baseBackup copies the primary's data directory into c's, with the
// settings that make c its standby (pg_basebackup -R).
func (r *Replicated) baseBackup(ctx context.Context, c *Cluster) error {
	initdb, _, err := postgresBinaries()
	if err != nil {
		return err
	}
	from := r.Primary()
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", from.port, standbyName)
	return c.runTool(ctx, filepath.Join(filepath.Dir(initdb), "pg_basebackup"),
		"-D", filepath.Join(c.dir, "data"), "-d", conninfo, "-R", "-X", "stream", "-c", "fast", "--no-sync")
}

// Primary returns the node that is the primary now.
func (r *Replicated) Primary() *Cluster { return r.nodes[r.primary] }

// Standby returns the node that is the standby now (dead between Failover
// and Rejoin).
func (r *Replicated) Standby() *Cluster { return r.nodes[1-r.primary] }

// URL returns the URL of the database "tasks" on both nodes, as a client
// that follows a failover names it: both hosts, and
// target_session_attrs=read-write, so that pgx connects to whichever is the
// primary; a connection attempt gives up on a node after two seconds.
func (r *Replicated) URL() string {
	hosts := make([]string, len(r.nodes))
	for i, c := range r.nodes {
		hosts[i] = c.Addr()
	}
	return fmt.Sprintf("postgres://postgres@%s/tasks?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		strings.Join(hosts, ","))
}

// StandbyURL returns the URL of the database "tasks" on the standby alone,
// which answers reads and refuses writes.
func (r *Replicated) StandbyURL() string { return r.Standby().url }

// HoldStandby cuts the standby off its primary, as a slow or broken
// network would, until Failover: its WAL receiver ends and is not started
// again (primary_conninfo cleared). With asynchronous replication, the
// primary confirms the commits of that time, which the standby lacks. It
// returns once the primary streams to no standby.
func (r *Replicated) HoldStandby(ctx context.Context) error {
	for _, statement := range []string{"ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()"} {
		if err := adminExec(ctx, r.Standby().AdminURL(), statement); err != nil {
			return fmt.Errorf("hold the standby at %s: %w", r.Standby().Addr(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, replicaPatience)
	defer cancel()
	for {
		state, err := replicationState(ctx, r.Primary().AdminURL())
		if err == nil && state == "" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the standby of %s still streams after %v (%v)", r.Primary().Addr(), replicaPatience, err)
		}
		time.Sleep(pollInterval)
	}
}

// Failover ends the primary as a crash of its machine would (SIGKILL to
// every process of the server at once) and promotes the standby, which
// then takes writes without a synchronous standby of its own until Rejoin.
// It returns when the new primary accepts writes.
func (r *Replicated) Failover(ctx context.Context) error {
	old := r.Primary()
	if err := old.kill(); err != nil {
		return err
	}
	r.primary = 1 - r.primary
	next := r.Primary()
	// The standby inherited the primary's synchronous_standby_names with
	// its base backup; promoted with it, it would hold every commit until
	// a standby of its own appears.
	for _, statement := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = ''",
		"SELECT pg_reload_conf()",
		fmt.Sprintf("SELECT pg_promote(true, %d)", int(replicaPatience.Seconds())),
	} {
		if err := adminExec(ctx, next.AdminURL(), statement); err != nil {
			return fmt.Errorf("promote the standby at %s: %w", next.Addr(), err)
		}
	}
	return nil
}

// Rejoin makes the node that Failover killed a standby of the new primary,
// from a fresh base backup, and returns when the primary waits for it
// again (synchronous replication) or, asynchronous, when it streams.
func (r *Replicated) Rejoin(ctx context.Context) error {
	c := r.Standby()
	if err := os.RemoveAll(filepath.Join(c.dir, "data")); err != nil {
		return fmt.Errorf("remove the dead node's data: %w", err)
	}
	if err := r.baseBackup(ctx, c); err != nil {
		return fmt.Errorf("a base backup of %s: %w", r.Primary().Addr(), err)
	}
	if err := c.Start(); err != nil {
		return err
	}
	return r.attach(ctx)
}

// attach waits until the standby streams from the primary, then, with
// synchronous replication, makes the primary wait for it and waits until
// it does.
func (r *Replicated) attach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, replicaPatience)
	defer cancel()
	primary := r.Primary().AdminURL()
	want := "async"
	if r.synchronous {
		want = "sync"
		for _, statement := range []string{
			"ALTER SYSTEM SET synchronous_standby_names = '" + standbyName + "'",
			"SELECT pg_reload_conf()",
		} {
			if err := adminExec(ctx, primary, statement); err != nil {
				return fmt.Errorf("make the primary wait for its standby: %w", err)
			}
		}
	}
	for {
		state, err := replicationState(ctx, primary)
		if err == nil && state == want {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the standby of %s is not %s after %v (last seen %q, %v); the standby logged:\n%s",
				r.Primary().Addr(), want, replicaPatience, state, err, r.Standby().readLog(0))
		}
		time.Sleep(pollInterval)
	}
}

// replicationState returns the sync_state of the standby streaming from
// the primary at adminURL ("sync", "async"), "" while none streams.
func replicationState(ctx context.Context, adminURL string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var state string
	err = conn.QueryRow(ctx, "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
		standbyName).Scan(&state)
	return state, err
}

// kill ends every process of the server at once with SIGKILL, as a crash of
// its machine would (without the machine's silence: the kernel resets the
// clients' connections), and waits until the server's process has ended.
// PostgreSQL's processes each lead a session of their own, so the
// postmaster is stopped first, lest it start more, then its children are
// killed, then it.
func (c *Cluster) kill() error {
	if c.proc == nil {
		return nil
	}
	pid := c.proc.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", c.kind.name, err)
	}
	for _, child := range children(pid) {
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if ended, err := c.awaitEnd(stopPatience); ended || err != nil {
		return err
	}
	return fmt.Errorf("kill %s: process %d survived SIGKILL", c.kind.name, pid)
}

// children returns the processes whose parent is pid, read from /proc.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var found []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			found = append(found, child)
		}
	}
	return found
}
