package testdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Polling of a server process.
const (
	pollInterval = 20 * time.Millisecond
	pingPatience = 2 * time.Second // one connection attempt
	logTail      = 3000            // bytes of the log that errors quote
)

// logPath returns the path of the server's log: its output and errors.
func (c *Cluster) logPath() string { return filepath.Join(c.dir, "server.log") }

// createLog creates the server's log, writable by the server's user.
func (c *Cluster) createLog() error {
	f, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create the server's log: %w", err)
	}
	f.Close()
	return c.owner.own(c.logPath())
}

// start runs the server on c.port and waits until it answers. Its output
// goes to the log file directly, so that no goroutine copies it.
func (c *Cluster) start() error {
	log, err := os.OpenFile(c.logPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open the server's log: %w", err)
	}
	defer log.Close()
	since, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("open the server's log: %w", err)
	}
	argv := c.kind.command(c)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = c.dir, log, log
	if len(c.kind.env) > 0 {
		cmd.Env = append(os.Environ(), c.kind.env...)
	}
	cmd.SysProcAttr = processAttr(c.owner, c.kind.death)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.kind.name, err)
	}
	c.proc = cmd.Process
	return c.awaitReady(since)
}

// awaitReady waits until the server answers, and fails when it exits or
// startPatience runs out, quoting what it logged since the offset since.
func (c *Cluster) awaitReady(since int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), startPatience)
	defer cancel()
	for {
		ended, err := c.ended()
		switch {
		case err != nil:
			return err
		case ended:
			return c.startFailed("exited", since)
		case c.answers(ctx):
			return nil
		case ctx.Err() != nil:
			return errors.Join(c.startFailed(fmt.Sprintf("did not answer within %v", startPatience), since), c.Stop(StopImmediate))
		}
		time.Sleep(pollInterval)
	}
}

// answers reports whether the server accepts a connection now.
func (c *Cluster) answers(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, pingPatience)
	defer cancel()
	return c.kind.ping(ctx, c.AdminURL()) == nil
}

// startFailed returns the error of a start that failed with what, quoting
// the log since the offset since; it wraps errPortTaken when the server
// found its port taken.
func (c *Cluster) startFailed(what string, since int64) error {
	log := c.readLog(since)
	err := fmt.Errorf("%s on %s %s; it logged:\n%s", c.kind.name, c.Addr(), what, log)
	if strings.Contains(log, "already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// readLog returns the end of what the server logged since the offset since.
func (c *Cluster) readLog(since int64) string {
	b, err := os.ReadFile(c.logPath())
	if err != nil {
		return err.Error()
	}
	b = b[min(since, int64(len(b))):]
	if len(b) > logTail {
		b = b[len(b)-logTail:]
	}
	return string(b)
}

// Stop stops the server in mode and waits until its process has ended,
// killing it if it takes longer than a minute. Stopping a stopped server
// does nothing.
func (c *Cluster) Stop(mode StopMode) error {
	if c.proc == nil {
		return nil
	}
	signal, ok := c.kind.signals[mode]
	if !ok {
		return fmt.Errorf("stop %s: unknown mode %q", c.kind.name, mode)
	}
	if err := c.proc.Signal(signal); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop %s: %w", c.kind.name, err)
	}
	if ended, err := c.awaitEnd(stopPatience); ended || err != nil {
		return err
	}
	_ = c.proc.Signal(syscall.SIGKILL)
	if ended, err := c.awaitEnd(stopPatience); ended || err != nil {
		return err
	}
	return fmt.Errorf("stop %s: process %d survived SIGKILL", c.kind.name, c.proc.Pid)
}

// awaitEnd waits up to patience until the server's process has ended.
func (c *Cluster) awaitEnd(patience time.Duration) (bool, error) {
	deadline := time.Now().Add(patience)
	for {
		ended, err := c.ended()
		if ended || err != nil || time.Now().After(deadline) {
			return ended, err
		}
		time.Sleep(pollInterval)
	}
}

// ended reports whether the server's process has ended, collecting it
// if so; the Cluster then has no process.
func (c *Cluster) ended() (bool, error) {
	if c.proc == nil {
		return true, nil
	}
	ended, err := reaped(c.proc.Pid)
	if err != nil {
		return false, fmt.Errorf("%s: %w", c.kind.name, err)
	}
	if ended {
		_ = c.proc.Release()
		c.proc = nil
	}
	return ended, nil
}
