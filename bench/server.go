package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresBin holds the binaries of the bench's own server: Debian's
// PostgreSQL 15, the server of the harness.
const postgresBin = "/usr/lib/postgresql/15/bin"

// serverSettings are the settings of the bench's own server: durable as in
// production (every commit flushed, full pages after a checkpoint), Debian's
// default shared_buffers, and pg_stat_statements loaded so that the
// statements of a task's life can be read (statements.go), their planning
// time included: a statement planned for every call spends more time in
// the planner than in the executor at everyday rates. Autovacuum is
// off, as on the server of the earlier runs (docs/performance.md): the
// burn-downs run without planner statistics, the traps hold for their whole
// run, and no vacuum of one side's tables lands in the middle of a phase.
// It is set in postgresql.auto.conf (alterableSettings), not on the command
// line, which ALTER SYSTEM cannot override: the sizing scenario turns it
// on for its own runs. Each scenario
// pool holds 16 connections and River's listener and taskpg's Notifier one
// more each, far below the default 100 connections.
var serverSettings = []string{
	"listen_addresses=127.0.0.1",
	"fsync=on", "synchronous_commit=on", "full_page_writes=on",
	"shared_buffers=128MB",
	"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all",
	"pg_stat_statements.track_planning=on",
}

// alterableSettings are the settings of the bench's own server that a
// scenario may change with ALTER SYSTEM: written to postgresql.auto.conf.
var alterableSettings = []string{"autovacuum = off"}

// server is a PostgreSQL the bench started for itself.
type server struct {
	dir    string        // data directory and socket, removed at the end
	cmd    *exec.Cmd     // the postmaster; nil until started
	exited chan struct{} // closed once the postmaster has exited
	port   int
}

// url returns the URL of the server's postgres database.
func (s *server) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// startServer initializes a cluster in a temporary directory, starts it on a
// free port of 127.0.0.1 and waits until it answers. PostgreSQL refuses to
// run as root, so as root it runs as the OS user postgres.
func startServer(ctx context.Context) (*server, error) {
	dir, err := os.MkdirTemp("", "taskrepo-bench-pg.")
	if err != nil {
		return nil, err
	}
	s := &server{dir: dir}
	cred, err := serverCredential(dir)
	if err != nil {
		return nil, errors.Join(err, s.stop())
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(postgresBin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, errors.Join(fmt.Errorf("initdb: %w: %s", err, out), s.stop())
	}
	auto := filepath.Join(data, "postgresql.auto.conf")
	if err := appendLines(auto, alterableSettings); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	if s.port, err = freePort(); err != nil {
		return nil, errors.Join(err, s.stop())
	}
	args := []string{"-D", data, "-p", strconv.Itoa(s.port), "-c", "unix_socket_directories=" + dir}
	for _, setting := range serverSettings {
		args = append(args, "-c", setting)
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, errors.Join(err, s.stop())
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	s.cmd = exec.Command(filepath.Join(postgresBin, "postgres"), args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// A process group of its own: Ctrl-C reaches the bench only, which
	// drops its databases before it stops the server.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return nil, errors.Join(fmt.Errorf("start postgres: %w", err), s.stop())
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	if err := s.wait(ctx); err != nil {
		logged, _ := os.ReadFile(log.Name())
		return nil, errors.Join(fmt.Errorf("%w: %s", err, logged), s.stop())
	}
	return s, nil
}

// serverCredential returns the OS user to run the server as, nil for the
// current one, and hands dir over to it.
func serverCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, the server needs the OS user postgres: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort asks the kernel for a free TCP port on 127.0.0.1. Another
// process could take it before the server does; the server then fails to
// start and says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// wait polls the server until it accepts a connection, for at most a
// minute.
func (s *server) wait(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, s.url())
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return errors.New("postgres exited")
		case <-ctx.Done():
			return fmt.Errorf("postgres did not answer: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop shuts the server down (a fast shutdown: the bench's databases are
// thrown away) and removes its directory.
func (s *server) stop() error {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	return os.RemoveAll(s.dir)
}

// appendLines appends lines to the file name.
func appendLines(name string, lines []string) error {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
	return errors.Join(err, f.Close())
}
