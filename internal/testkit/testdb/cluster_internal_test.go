package testdb

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process that starts a
// PostgreSQL of its own, prints its directory and waits to be killed.
const helperEnv = "TASKREPO_TESTDB_HELPER"

// TestSharedServersAreOwnClusters checks that, without URLs, the servers
// that the tests share are clusters of testdb's own when the binaries are
// installed, in directories named after this process.
func TestSharedServersAreOwnClusters(t *testing.T) {
	t.Parallel()
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		if os.Getenv(PostgresURLEnv) != "" {
			t.Skipf("%s is set", PostgresURLEnv)
		}
		if _, _, err := postgresBinaries(); err != nil {
			t.Skip(err)
		}
		Postgres(t)
		checkOwnDir(t, server.cluster, "pg")
	})
	t.Run("MariaDB", func(t *testing.T) {
		t.Parallel()
		if os.Getenv(MySQLURLEnv) != "" {
			t.Skipf("%s is set", MySQLURLEnv)
		}
		if _, _, err := mariadbBinaries(); err != nil {
			t.Skip(err)
		}
		MySQL(t)
		checkOwnDir(t, mysqlServer.cluster, "mariadb")
	})
}

// checkOwnDir fails t unless c is a running cluster of this process, in a
// directory of kind that removeLeftovers leaves alone.
func checkOwnDir(t *testing.T, c *Cluster, kind string) {
	t.Helper()
	if c == nil || c.proc == nil {
		t.Fatal("the shared server is no running cluster of testdb's own")
	}
	prefix := fmt.Sprintf("%s%s-%d-", serverDirPrefix, kind, os.Getpid())
	if filepath.Dir(c.dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(c.dir), prefix) {
		t.Errorf("the cluster lives in %s, want %s*", c.dir, filepath.Join(os.TempDir(), prefix))
	}
	removeLeftovers(os.TempDir())
	if _, err := os.Stat(c.dir); err != nil {
		t.Errorf("removeLeftovers removed a live cluster: %v", err)
	}
}

// TestRemoveLeftovers removes the server directories of dead processes
// only.
func TestRemoveLeftovers(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	names := map[string]bool{ // name: removed
		fmt.Sprintf("%spg-%d-123", serverDirPrefix, dead.Process.Pid):      true,
		fmt.Sprintf("%smariadb-%d-456", serverDirPrefix, dead.Process.Pid): true,
		fmt.Sprintf("%spg-%d-789", serverDirPrefix, os.Getpid()):           false,
		serverDirPrefix + "pg-notapid-1":                                   false,
		"unrelated-1-2":                                                    false,
	}
	for name := range names {
		if err := os.MkdirAll(filepath.Join(parent, name, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	removeLeftovers(parent)
	for name, removed := range names {
		_, err := os.Stat(filepath.Join(parent, name))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
}

// TestClusterEndsWithTestProcess kills a test process that runs a
// PostgreSQL of its own: the server shuts down and the reaper removes its
// directory within seconds.
func TestClusterEndsWithTestProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		runHelper()
		return
	}
	t.Parallel()
	if _, _, err := postgresBinaries(); err != nil {
		unavailable(t, RequirePostgresEnv, err.Error())
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestClusterEndsWithTestProcess$")
	helper.Env = append(os.Environ(), helperEnv+"=1")
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	helper.Process.Kill()
	helper.Wait()
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "dir ")
	if err != nil || !ok {
		t.Fatalf("the helper said %q (%v)", line, err)
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			return
		}
	}
	t.Errorf("%s is still there 15 s after its test process died", dir)
}

// runHelper starts a PostgreSQL of testdb's own, prints its directory and
// waits to be killed.
func runHelper() {
	c, err := startPostgresCluster()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("dir %s\n", c.dir)
	time.Sleep(time.Minute)
	runtime.KeepAlive(c) // the reaper would remove the directory with c
	os.Exit(1)
}
