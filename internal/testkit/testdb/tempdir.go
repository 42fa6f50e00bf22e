package testdb

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// serverDirPrefix begins the name of the temporary directory of every
// server of testdb's own: taskrepo-testdb-KIND-PID-RANDOM, PID being the
// test process's.
const serverDirPrefix = "taskrepo-testdb-"

// serverDir creates the temporary directory of a new server of kind ("pg",
// "mariadb") in os.TempDir(), after removing the directories that servers
// of test processes no longer alive left behind.
func serverDir(kind string) (string, error) {
	removeLeftovers(os.TempDir())
	pattern := fmt.Sprintf("%s%s-%d-*", serverDirPrefix, kind, os.Getpid())
	dir, err := os.MkdirTemp(os.TempDir(), pattern)
	if err != nil {
		return "", fmt.Errorf("create a directory for the server: %w", err)
	}
	return dir, nil
}

// removeLeftovers removes the server directories in parent whose test
// process has ended. Normally the reaper removed them; a directory stays
// behind when the machine stopped, or the reaper was killed, first.
func removeLeftovers(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, serverDirPrefix+"*"))
	for _, dir := range dirs {
		if pid, ok := dirPID(filepath.Base(dir)); ok && !pidAlive(pid) {
			_ = os.RemoveAll(dir)
		}
	}
}

// dirPID returns the pid of the test process that created the server
// directory called name, and whether name is one of those.
func dirPID(name string) (int, bool) {
	parts := strings.Split(strings.TrimPrefix(name, serverDirPrefix), "-")
	if !strings.HasPrefix(name, serverDirPrefix) || len(parts) != 3 {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	return pid, err == nil && pid > 0
}
