package testdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// keeper is one `pg_autoctl run` of an AutoFailover topology, the monitor's
// or a node's, and the PostgreSQL it runs: a child process of the test
// process, run as the topology's server account, that starts its
// PostgreSQL as a child of its own. It gets SIGQUIT when the test process
// ends, however it ends, and then stops its PostgreSQL.
type keeper struct {
	name   string // the node's name at the monitor, or "monitor"
	pgdata string
	port   int
	proc   *os.Process // nil while it does not run
}

// logPath returns the file that the keeper's output goes to, in every run.
func (k *keeper) logPath(dir string) string { return filepath.Join(dir, k.name+".log") }

// start runs `pg_autoctl run` for the keeper's data directory, its output
// appended to its log. It returns once the process started; the caller
// waits for what it must see at the monitor.
func (f *AutoFailover) start(k *keeper) error {
	if k.proc != nil {
		return fmt.Errorf("start %s: it runs", k.name)
	}
	log, err := os.OpenFile(k.logPath(f.dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the log of %s: %w", k.name, err)
	}
	defer log.Close()
	cmd := exec.Command(f.autoctl, "run", "--pgdata", k.pgdata)
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.Env = f.dir, log, log, f.env()
	cmd.SysProcAttr = processAttr(f.owner, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start pg_autoctl run for %s: %w", k.name, err)
	}
	k.proc = cmd.Process
	return nil
}

// stop asks the keeper to stop its PostgreSQL and itself at once
// (SIGQUIT: pg_autoctl stops its PostgreSQL in the mode fast, without a
// word to the monitor, and exits), and kills what is left of it when that
// takes longer than stopPatience.
func (f *AutoFailover) stop(k *keeper) error {
	if k.proc == nil {
		return nil
	}
	if err := k.proc.Signal(syscall.SIGQUIT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", k.name, err)
	}
	if ended, err := k.awaitEnd(stopPatience); ended || err != nil {
		return err
	}
	return f.crash(k)
}

// crash ends the keeper and every process under it at once, as a crash
// of their machine would: each is stopped (SIGSTOP) as it is found, lest
// the keeper start its PostgreSQL again or the postmaster start more
// backends, then all are killed with SIGKILL. It returns once the keeper
// and every process under it have ended, and removes the shared memory
// that the killed PostgreSQL left.
func (f *AutoFailover) crash(k *keeper) error {
	if k.proc == nil {
		return nil
	}
	stopped := stopTree(k.proc.Pid)
	for _, pid := range stopped {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	ended, err := k.awaitEnd(stopPatience)
	if err != nil {
		return err
	}
	if !ended {
		return fmt.Errorf("crash %s: pg_autoctl survived SIGKILL", k.name)
	}
	deadline := time.Now().Add(stopPatience)
	for slices.ContainsFunc(stopped, pidRunning) {
		if time.Now().After(deadline) {
			return fmt.Errorf("crash %s: a process of it survived SIGKILL", k.name)
		}
		time.Sleep(pollInterval)
	}
	removeSharedMemory(stopped)
	return nil
}

// stopTree sends SIGSTOP to pid and to every process under it, parents
// before their children, and returns them all.
func stopTree(pid int) []int {
	var all []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		_ = syscall.Kill(next, syscall.SIGSTOP)
		all = append(all, next)
		queue = append(queue, children(next)...)
	}
	return all
}

// pidRunning reports whether the process pid exists and is not a zombie
// (a killed process whose parent died is left a zombie where nothing
// reaps orphans).
func pidRunning(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// awaitEnd waits up to patience until the keeper's process has ended,
// collecting it if so.
func (k *keeper) awaitEnd(patience time.Duration) (bool, error) {
	deadline := time.Now().Add(patience)
	for {
		ended, err := reaped(k.proc.Pid)
		if err != nil {
			return false, fmt.Errorf("%s: %w", k.name, err)
		}
		if ended {
			_ = k.proc.Release()
			k.proc = nil
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(pollInterval)
	}
}

// killLeftovers kills, with SIGKILL, every process whose command line
// names dir, but the process spare (its reaper): a PostgreSQL of the
// topology that outlived its keeper.
func killLeftovers(dir string, spare int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || pid == spare {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// autoctlTool runs `pg_autoctl args...` to its end, as the topology's server
// account, and returns an error with its output when it fails.
func (f *AutoFailover) autoctlTool(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, f.autoctl, args...)
	cmd.Dir, cmd.Env = f.dir, f.env()
	cmd.SysProcAttr = processAttr(f.owner, syscall.SIGKILL)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_autoctl %s: %w\n%s", strings.Join(args, " "), err, tail(out))
	}
	return nil
}

// env returns the environment of pg_autoctl's processes: the test
// process's, with pg_autoctl's configuration, state and pid files in the
// topology's directory (XDG_*), where cleanup removes them, and
// PostgreSQL's binaries of the version that has the monitor's extension.
func (f *AutoFailover) env() []string {
	return append(os.Environ(),
		"XDG_CONFIG_HOME="+filepath.Join(f.dir, "config"),
		"XDG_DATA_HOME="+filepath.Join(f.dir, "share"),
		"XDG_RUNTIME_DIR="+filepath.Join(f.dir, "run"),
		"PG_CONFIG="+filepath.Join(f.bin, "pg_config"),
		"HOME="+f.dir,
	)
}

// readLog returns the end of k's log, for messages.
func (f *AutoFailover) readLog(k *keeper) string {
	b, err := os.ReadFile(k.logPath(f.dir))
	if err != nil {
		return err.Error()
	}
	return tail(b)
}

// tail returns the last logTail bytes of b.
func tail(b []byte) string {
	if len(b) > logTail {
		b = b[len(b)-logTail:]
	}
	return string(b)
}

// appendFile appends lines to the file at path, which the server's account
// may own: it keeps its owner.
func appendFile(path string, lines ...string) error {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	_, err = io.WriteString(file, "\n"+strings.Join(lines, "\n")+"\n")
	return errors.Join(err, file.Close())
}
