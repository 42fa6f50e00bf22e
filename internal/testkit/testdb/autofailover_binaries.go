package testdb

import (
	"fmt"
	"os"
	"path/filepath"
)

// RequireAutoFailoverEnv set to 1 turns the skip of OwnAutoFailover without
// pg_auto_failover into a failure.
const RequireAutoFailoverEnv = "TASK_TEST_REQUIRE_AUTOFAILOVER"

// autoFailoverBinaries finds pg_auto_failover's pg_autoctl (on PATH, else
// in /usr/bin or a PostgreSQL's bin directory) and the bin directory of
// the highest PostgreSQL version that has its monitor's extension,
// pgautofailover (Debian's postgresql-15-auto-failover installs both):
// the monitor needs the extension built for the server that runs it.
func autoFailoverBinaries() (autoctl, bin string, err error) {
	for _, dir := range versionDirs("/usr/lib/postgresql/*/bin") {
		extension := filepath.Join(filepath.Dir(dir), "lib", "pgautofailover.so")
		if !executable(filepath.Join(dir, "pg_ctl")) || !exists(extension) {
			continue
		}
		autoctl = findProgram("pg_autoctl")
		if local := filepath.Join(dir, "pg_autoctl"); executable(local) {
			autoctl = local
		}
		if autoctl != "" {
			return autoctl, dir, nil
		}
	}
	if findProgram("pg_autoctl") == "" {
		return "", "", fmt.Errorf("%w: pg_auto_failover's pg_autoctl is not installed (Debian: postgresql-15-auto-failover)", errNoOwnServer)
	}
	return "", "", fmt.Errorf("%w: no PostgreSQL in /usr/lib/postgresql/*/bin has pg_auto_failover's extension (Debian: postgresql-15-auto-failover)", errNoOwnServer)
}

// exists reports whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
