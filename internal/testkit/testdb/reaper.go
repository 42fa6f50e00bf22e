package testdb

import (
	"fmt"
	"os"
	"os/exec"
)

// reaperScript removes a server's directory ($1) when the test process
// ends, however it ends: its standard input is a pipe whose only writer is
// the test process, so reading reaches the end when that process exits.
// By then the kernel has sent the server its death signal; the script
// waits until the server has removed its pid file ($2), at most 30 s, and
// removes the directory. It ignores the signals a terminal sends the
// tests.
const reaperScript = `trap '' HUP INT QUIT TERM
while read -r _; do :; done
i=0
while [ -e "$2" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
rm -rf "$1"`

// reaper is the process that removes a server's directory after the test
// process that started the server ends.
type reaper struct {
	cmd  *exec.Cmd
	pipe *os.File // the write end of the reaper's standard input
}

// startReaper starts the reaper of dir, a server's directory, whose server
// has the pid file pidFile.
func startReaper(dir, pidFile string) (*reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start the reaper of %s: %w", dir, err)
	}
	defer r.Close()
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "taskrepo-testdb-reaper", dir, pidFile)
	cmd.Stdin = r
	cmd.SysProcAttr = processAttr(nil, 0)
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start the reaper of %s: %w", dir, err)
	}
	return &reaper{cmd: cmd, pipe: w}, nil
}

// stop makes the reaper remove the directory now and waits until it has.
func (r *reaper) stop() error {
	r.pipe.Close()
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("reaper: %w", err)
	}
	return nil
}
