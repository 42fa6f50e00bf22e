package testdb

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// postgresSettings are the settings of every PostgreSQL of testdb's own:
// built for throwaway data and speed (no fsync, no full-page images: they
// guard against the machine's crash, not the server's), with room for the
// many pools that parallel tests open. A standby that lost its primary
// retries its WAL sources every wal_retrieve_retry_interval, and at the
// default 5 s its promotion waited that long in 12 of 100 failovers.
var postgresSettings = []string{
	"fsync=off",
	"full_page_writes=off",
	"max_connections=500",
	"shared_buffers=128MB",
	"wal_retrieve_retry_interval=100ms",
}

// sharedPostgresSettings are added for the server that a process's tests
// share, which nobody crashes: a commit does not even wait for its WAL's
// write. OwnPostgres goes without, as a Stop(StopImmediate) would lose
// the last commits.
var sharedPostgresSettings = []string{"synchronous_commit=off"}

// startPostgresCluster creates and starts a PostgreSQL cluster of testdb's
// own with settings beyond postgresSettings, or returns an error wrapping
// errNoOwnServer when PostgreSQL's server binaries are not installed.
func startPostgresCluster(settings ...string) (*Cluster, error) {
	return startPostgresClusterEnv(nil, settings...)
}

// startPostgresClusterEnv is startPostgresCluster with env (NAME=value
// each) added to the environment of the server process.
func startPostgresClusterEnv(env []string, settings ...string) (*Cluster, error) {
	initdb, postgres, err := postgresBinaries()
	if err != nil {
		return nil, err
	}
	kind := postgresKind(initdb, postgres, slices.Concat(postgresSettings, settings))
	kind.env = env
	return startCluster(kind)
}

// postgresKind is PostgreSQL run from the binaries initdb and postgres with
// settings (name=value). The
// superuser is "postgres" and every local connection is trusted. The
// server runs as the user "postgres" when the tests run as root. At the
// test process's end it gets SIGQUIT, an immediate shutdown: unlike
// SIGKILL it still removes its shared memory and its pid file before it
// exits, so the reaper may remove the directory at once; unlike SIGTERM or
// SIGINT it waits for no client and writes no checkpoint.
func postgresKind(initdb, postgres string, settings []string) *serverKind {
	return &serverKind{
		name:    "PostgreSQL",
		dirName: "pg",
		users:   []string{"postgres"},
		pidFile: "data/postmaster.pid",
		initialize: func(ctx context.Context, c *Cluster) error {
			return c.runTool(ctx, initdb, "-D", filepath.Join(c.dir, "data"), "-U", "postgres",
				"--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C.UTF-8")
		},
		command:  func(c *Cluster) []string { return postgresCommand(postgres, settings, c) },
		adminURL: postgresAdminURL,
		ping: func(ctx context.Context, adminURL string) error {
			return adminExec(ctx, adminURL, "SELECT 1")
		},
		signals: map[StopMode]syscall.Signal{
			StopSmart:     syscall.SIGTERM,
			StopFast:      syscall.SIGINT,
			StopImmediate: syscall.SIGQUIT,
		},
		death: syscall.SIGQUIT,
	}
}

// postgresCommand returns the command line of c's postgres with settings:
// listening on 127.0.0.1 on c's port, its Unix socket in c's directory.
func postgresCommand(postgres string, settings []string, c *Cluster) []string {
	argv := []string{postgres, "-D", filepath.Join(c.dir, "data"), "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + c.dir}
	for _, setting := range settings {
		argv = append(argv, "-c", setting)
	}
	return argv
}

// postgresAdminURL returns the superuser's URL of c's database "postgres".
func postgresAdminURL(c *Cluster) string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", c.Addr())
}
