package faults

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// workerBinary is ./worker, built once for the package's tests.
var workerBinary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "taskrepo-fault")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	workerBinary = filepath.Join(dir, "worker")
	build := exec.Command("go", "build", "-o", workerBinary, "./worker")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the worker:", err)
		return 1
	}
	code := m.Run()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goroutines outlived the tests:", err)
		return 1
	}
	return code
}

// workerPatience bounds how long a worker may take to start or to stop.
const workerPatience = 30 * time.Second

// worker is a consumer process.
type worker struct {
	owner  string
	cmd    *exec.Cmd
	stderr lockedBuffer
	exited chan error

	mu    sync.Mutex
	lines []string // what it printed after "ready"
}

// startWorker starts a consumer process of owner on topic and waits until
// it is ready.
func startWorker(t testing.TB, database, topic, owner string, args ...string) *worker {
	t.Helper()
	w, err := launchWorker(t, database, topic, owner, args...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// workerTempFail is the exit status of a worker whose Start found the
// database unavailable (EX_TEMPFAIL, worker's exitTempFail).
const workerTempFail = 75

// errWorkerTempFail is a worker that exited with status workerTempFail:
// the database was unavailable when it started.
var errWorkerTempFail = errors.New("the database was unavailable at its start (exit status 75)")

// launchWorker starts a consumer process as startWorker does, and returns
// an error when it does not get ready: errWorkerTempFail when it exited
// for an unavailable database, as a supervisor would see.
func launchWorker(t testing.TB, database, topic, owner string, args ...string) (*worker, error) {
	t.Helper()
	w := &worker{owner: owner, exited: make(chan error, 1)}
	w.cmd = exec.Command(workerBinary, append([]string{"-database", database, "-topic", topic, "-owner", owner}, args...)...)
	w.cmd.Stderr = &w.stderr
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", owner, err)
	}
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		ready <- lines.Scan() && lines.Text() == "ready"
		for lines.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, lines.Text())
			w.mu.Unlock()
		}
		w.exited <- w.cmd.Wait()
	}()
	t.Cleanup(func() { _ = w.cmd.Process.Kill() })
	select {
	case ok := <-ready:
		if ok {
			return w, nil
		}
	case <-time.After(workerPatience):
		return nil, fmt.Errorf("worker %s did not start within %v", owner, workerPatience)
	}
	var exit *exec.ExitError
	select {
	case err := <-w.exited:
		if errors.As(err, &exit) && exit.ExitCode() == workerTempFail {
			return nil, fmt.Errorf("worker %s did not start: %w: %s", owner, errWorkerTempFail, w.stderr.String())
		}
	case <-time.After(workerPatience):
	}
	return nil, fmt.Errorf("worker %s did not start: %s", owner, w.stderr.String())
}

// lockedBuffer is a strings.Builder that a process writes to while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// printed returns the lines the worker printed after "ready" so far.
func (w *worker) printed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

// awaitLine waits until the worker printed a line that begins with one
// of prefixes and returns the first such line; it fails t when none came
// within workerPatience.
func (w *worker) awaitLine(t testing.TB, prefixes ...string) string {
	t.Helper()
	deadline := time.Now().Add(workerPatience)
	for {
		for _, line := range w.printed() {
			for _, prefix := range prefixes {
				if strings.HasPrefix(line, prefix) {
					return line
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s printed no line that begins with %q within %v; it printed:\n%s\nstderr:\n%s",
				w.owner, prefixes, workerPatience, strings.Join(w.printed(), "\n"), w.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill crashes the worker with SIGKILL and waits until it is gone.
func (w *worker) kill(t testing.TB) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %s: %v", w.owner, err)
	}
	select {
	case <-w.exited:
	case <-time.After(workerPatience):
		t.Fatalf("worker %s outlived SIGKILL", w.owner)
	}
}

// stop asks the worker to stop (SIGTERM) and checks that it stopped
// cleanly.
func (w *worker) stop(t testing.TB) {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop worker %s: %v", w.owner, err)
	}
	select {
	case err := <-w.exited:
		var exit *exec.ExitError
		if errors.As(err, &exit) || err != nil {
			t.Errorf("worker %s stopped with %v: %s", w.owner, err, w.stderr.String())
		}
	case <-time.After(workerPatience):
		t.Fatalf("worker %s did not stop within %v", w.owner, workerPatience)
	}
}

// TestAWorkerThatFindsNoDatabaseAsksToBeStartedAgain: a consumer process
// whose Start finds no database (nothing listens on port 1) gets an error
// that wraps taskapi.ErrUnavailable, and the worker exits with status 75
// for its supervisor to start it again, as the soak's does.
func TestAWorkerThatFindsNoDatabaseAsksToBeStartedAgain(t *testing.T) {
	t.Parallel()
	_, err := launchWorker(t, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5", "anything", "nowhere")
	if !errors.Is(err, errWorkerTempFail) {
		t.Fatalf("a worker started without its database = %v, want exit status 75 (errWorkerTempFail)", err)
	}
}
