package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is taskctl running on a pseudo-terminal, as on a user's screen.
type terminal struct {
	t    testing.TB
	pty  *os.File
	cmd  *exec.Cmd
	mu   sync.Mutex
	seen bytes.Buffer  // everything printed so far
	read chan struct{} // closed when the terminal's output ends
	exit chan error
}

// ptyPatience bounds every wait on a terminal.
const ptyPatience = 30 * time.Second

// onTerminal starts taskctl with args on a pseudo-terminal of 40 rows and
// 160 columns.
func onTerminal(t testing.TB, database string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TASKREPO_DATABASE_URL="+database, "TERM=xterm-256color", "NO_COLOR=")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("start taskctl on a terminal: %v", err)
	}
	term := &terminal{t: t, pty: f, cmd: cmd, read: make(chan struct{}), exit: make(chan error, 1)}
	go term.copy()
	go func() { term.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return term
}

// copy keeps what the terminal shows until its output ends.
func (term *terminal) copy() {
	defer close(term.read)
	buf := make([]byte, 4096)
	for {
		n, err := term.pty.Read(buf)
		term.mu.Lock()
		term.seen.Write(buf[:n])
		term.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// ansi matches the escape sequences of a terminal's output.
var ansi = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[PX^_][^\x1b]*\x1b\\|[()][0-9A-Za-z]|[=>78cDEHMNO])`)

// raw is what the terminal printed so far, escape sequences and all.
func (term *terminal) raw() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.seen.String()
}

// text is what the terminal showed so far, without escape sequences.
func (term *terminal) text() string {
	return ansi.ReplaceAllString(term.raw(), "")
}

// words is what the terminal showed so far as words in the order they
// were drawn: escape sequences and line breaks count as spaces, and every
// run of spaces as one.
func (term *terminal) words() string {
	return strings.Join(strings.Fields(ansi.ReplaceAllString(term.raw(), " ")), " ")
}

// expect waits until the terminal has shown every one of wants.
func (term *terminal) expect(wants ...string) {
	term.t.Helper()
	term.expectIn(term.text, wants)
}

// expectWords waits until the terminal's words have shown every one of
// wants: for screens drawn in columns, or in pieces.
func (term *terminal) expectWords(wants ...string) {
	term.t.Helper()
	term.expectIn(term.words, wants)
}

// expectIn waits until shown() holds every one of wants.
func (term *terminal) expectIn(shown func() string, wants []string) {
	term.t.Helper()
	deadline := time.Now().Add(ptyPatience)
	for {
		text := shown()
		missing := ""
		for _, w := range wants {
			if !strings.Contains(text, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal did not show %q within %v; it showed:\n%s", missing, ptyPatience, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send types s.
func (term *terminal) send(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.pty, s); err != nil {
		term.t.Fatalf("type %q: %v", s, err)
	}
}

// wait waits for taskctl to end and everything it printed to be read,
// and returns its exit code.
func (term *terminal) wait() int {
	term.t.Helper()
	select {
	case err := <-term.exit:
		select {
		case <-term.read:
		case <-time.After(ptyPatience):
			term.t.Fatalf("the terminal's output did not end within %v of taskctl's end", ptyPatience)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			term.t.Fatalf("taskctl on a terminal: %v", err)
		}
		return 0
	case <-time.After(ptyPatience):
		term.t.Fatalf("taskctl did not end within %v; it showed:\n%s", ptyPatience, term.text())
		return -1
	}
}

// TestPurgeAsksOnATerminal answers purge's question no, then Ctrl-C, then
// yes.
func TestPurgeAsksOnATerminal(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			must(t, db, "topic", "init", "orders")
			must(t, db, "push", "-t", "orders", "a", "b", "c")
			no := onTerminal(t, db, "purge", "-t", "orders", "--state", "ready")
			no.expect("Purge 3 tasks of orders", "[y/N]")
			no.send("n\r")
			if code := no.wait(); code != exitDeclined {
				t.Fatalf("answered no: exit %d, want %d; it showed:\n%s", code, exitDeclined, no.text())
			}
			wantStates(t, db, "orders", map[string]int64{"READY": 3})
			interrupted := onTerminal(t, db, "purge", "-t", "orders", "--state", "ready")
			interrupted.expect("[y/N]")
			interrupted.send("\x03") // Ctrl-C
			if code := interrupted.wait(); code != exitInterrupted {
				t.Fatalf("Ctrl-C at the prompt: exit %d, want %d; it showed:\n%s", code, exitInterrupted, interrupted.text())
			}
			wantStates(t, db, "orders", map[string]int64{"READY": 3})
			yes := onTerminal(t, db, "purge", "-t", "orders", "--state", "ready")
			yes.expect("[y/N]")
			yes.send("y\r")
			if code := yes.wait(); code != 0 {
				t.Fatalf("answered yes: exit %d; it showed:\n%s", code, yes.text())
			}
			yes.expect("purged 3 tasks of orders")
			wantStates(t, db, "orders", map[string]int64{})
		})
	}
}
