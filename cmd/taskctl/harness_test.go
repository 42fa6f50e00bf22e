package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// binary is the taskctl built for the tests, as a user builds it.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "taskctl-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "taskctl")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build taskctl:", err)
		return 1
	}
	return m.Run()
}

// outcome is what a run of taskctl printed and how it exited.
type outcome struct {
	stdout, stderr string
	code           int
}

// commandPatience bounds one run of taskctl in a test.
const commandPatience = 2 * time.Minute

// taskctl runs the binary in dir with args and stdin, with the database
// URL in $TASKREPO_DATABASE_URL (empty: none), as a user would.
func taskctl(t testing.TB, database, stdin string, args ...string) outcome {
	t.Helper()
	return taskctlIn(t, t.TempDir(), database, stdin, args...)
}

// taskctlIn is taskctl in a working directory of the caller's choice.
func taskctlIn(t testing.TB, dir, database, stdin string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandPatience)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TASKREPO_DATABASE_URL="+database, "NO_COLOR=")
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("taskctl %q: %v", args, err)
	}
	if strings.Contains(stderr.String(), "goroutine ") || strings.Contains(stderr.String(), "panic:") {
		t.Errorf("taskctl %q printed a stack trace:\n%s", args, stderr.String())
	}
	return outcome{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// must runs taskctl and fails t unless it exits 0.
func must(t testing.TB, database string, args ...string) string {
	t.Helper()
	out := taskctl(t, database, "", args...)
	if out.code != 0 {
		t.Fatalf("taskctl %q: exit %d\nstdout: %s\nstderr: %s", args, out.code, out.stdout, out.stderr)
	}
	return out.stdout
}

// wantExit runs taskctl and fails t unless it exits with code and names
// the problem (want) on stderr.
func wantExit(t testing.TB, database string, code int, want string, args ...string) outcome {
	t.Helper()
	out := taskctl(t, database, "", args...)
	if out.code != code || !strings.Contains(out.stderr, want) {
		t.Errorf("taskctl %q: exit %d, stderr %q; want exit %d and %q", args, out.code, out.stderr, code, want)
	}
	return out
}

// A dbCase names a database URL maker for the tests that run on each.
type dbCase struct {
	name string
	url  func(t testing.TB) string // a fresh database of t's own, migrated
}

// backends are the databases every command test runs on; smoke marks the
// MariaDB subset.
func backends(smoke bool) []dbCase {
	all := []dbCase{{"SQLite", sqliteURL}, {"PostgreSQL", postgresURL}}
	if smoke {
		all = append(all, dbCase{"MySQL", mysqlURL})
	}
	return all
}

// sqliteURL returns a fresh SQLite database of t's own, migrated by taskctl.
func sqliteURL(t testing.TB) string {
	t.Helper()
	u := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
	must(t, u, "migrate")
	return u
}

// postgresURL returns a fresh PostgreSQL database of t's own, migrated.
func postgresURL(t testing.TB) string {
	t.Helper()
	return testdb.PostgresURL(t)
}

// mysqlURL returns a fresh MySQL or MariaDB database of t's own, migrated
// by taskctl, as a mysql:// URL.
func mysqlURL(t testing.TB) string {
	t.Helper()
	cfg := testdb.MySQLConfig(t)
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName}
	if cfg.Passwd != "" {
		u.User = url.UserPassword(cfg.User, cfg.Passwd)
	} else {
		u.User = url.User(cfg.User)
	}
	must(t, u.String(), "migrate")
	return u.String()
}

// openStoreOf opens the store of database as a command does, closed when
// t ends.
func openStoreOf(t testing.TB, database string) store {
	t.Helper()
	a := &app{database: database, stdout: io.Discard, stderr: io.Discard}
	s, err := a.open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
