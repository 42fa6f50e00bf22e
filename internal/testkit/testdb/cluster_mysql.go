package testdb

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
)

// mariadbSettings are the settings of a MariaDB of testdb's own, read from
// no option file: the character set of the machines the tests ran on
// before, no flush to disk at every commit, room for the many pools that
// parallel tests open, and addresses without DNS.
var mariadbSettings = []string{
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_general_ci",
	"--innodb-flush-log-at-trx-commit=2",
	"--max-connections=500",
	"--skip-name-resolve",
}

// startMariaDBCluster creates and starts a MariaDB server of testdb's own,
// or returns an error wrapping errNoOwnServer when MariaDB's binaries are
// not installed.
func startMariaDBCluster() (*Cluster, error) {
	install, mariadbd, err := mariadbBinaries()
	if err != nil {
		return nil, err
	}
	return startCluster(mariadbKind(install, mariadbd))
}

// mariadbKind is MariaDB run from the binaries install (mariadb-install-db)
// and mariadbd. root needs no password over TCP. The server runs as the
// user "mysql" when the tests run as root (rather than as root with
// --user=mysql, the same way as PostgreSQL). At the test process's end it
// gets SIGTERM, a normal shutdown, which removes its pid file: the reaper
// waits for that before removing the directory.
func mariadbKind(install, mariadbd string) *serverKind {
	return &serverKind{
		name:    "MariaDB",
		dirName: "mariadb",
		users:   []string{"mysql"},
		pidFile: "mariadbd.pid",
		// The install's bootstrap server needs its own tmpdir as much as
		// the running server (see mariadbCommand): another server starting
		// beside it took its temporary table from /tmp too.
		initialize: func(ctx context.Context, c *Cluster) error {
			return c.runTool(ctx, install, "--no-defaults", "--datadir="+filepath.Join(c.dir, "data"),
				"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
				"--tmpdir="+c.dir)
		},
		command:  func(c *Cluster) []string { return mariadbCommand(mariadbd, c) },
		adminURL: func(c *Cluster) string { return "root@tcp(" + c.Addr() + ")/" },
		ping: func(ctx context.Context, adminURL string) error {
			return mysqlExec(ctx, adminURL, "SELECT 1")
		},
		signals: map[StopMode]syscall.Signal{
			StopSmart:     syscall.SIGTERM,
			StopFast:      syscall.SIGTERM,
			StopImmediate: syscall.SIGKILL,
		},
		death: syscall.SIGTERM,
	}
}

// mariadbCommand returns the command line of c's mariadbd: listening on
// 127.0.0.1 on c's port, its socket, pid file, log and temporary files in
// c's directory. The temporary files must not be in /tmp, the default:
// a MariaDB that starts removes every "#sql" file of its tmpdir, and so
// another test's server starting took the on-disk temporary table from
// under a running query ("Error on delete of '/tmp/#sql-temptable-…'").
func mariadbCommand(mariadbd string, c *Cluster) []string {
	return append([]string{mariadbd, "--no-defaults",
		"--datadir=" + filepath.Join(c.dir, "data"),
		"--tmpdir=" + c.dir,
		"--skip-networking=0", "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(c.port),
		"--socket=" + filepath.Join(c.dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(c.dir, "mariadbd.pid"),
		"--log-error=" + c.logPath(),
	}, mariadbSettings...)
}
