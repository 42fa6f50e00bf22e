package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// firstLine runs taskctl serve on database with args, returns the first
// line it prints, and stops it with SIGINT.
func firstLine(t *testing.T, database string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "TASKREPO_DATABASE_URL="+database)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("taskctl serve %q ended with %v", args, err)
		}
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("taskctl serve %q printed %q: %v", args, line, err)
	}
	// It answers once its first reading is done: a SIGINT then stops it
	// with exit 0, as a user's Ctrl-C would.
	if m := regexp.MustCompile(`:([0-9]+)/`).FindStringSubmatch(line); m != nil {
		if resp, err := http.Get("http://127.0.0.1:" + m[1] + "/static/style.css"); err == nil {
			resp.Body.Close()
		} else if resp, err := http.Get("http://[::1]:" + m[1] + "/static/style.css"); err == nil {
			resp.Body.Close()
		}
	}
	return line
}

// TestServePrintsItsAddress starts taskctl serve on addresses of each
// kind: it prints the host as given, with the port it got, and says when
// that is every address.
func TestServePrintsItsAddress(t *testing.T) {
	db := sqliteURL(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for listen, want := range map[string]string{
		"0.0.0.0:0":   `at http://0\.0\.0\.0:[1-9][0-9]*/ \(every address`,
		":0":          `at http://0\.0\.0\.0:[1-9][0-9]*/ \(every address`,
		"127.0.0.1:0": `at http://127\.0\.0\.1:[1-9][0-9]*/ \(Ctrl-C`,
		"localhost:0": `at http://localhost:[1-9][0-9]*/ \(Ctrl-C`,
		"[::1]:0":     `at http://\[::1\]:[1-9][0-9]*/ \(Ctrl-C`,
	} {
		if line := firstLine(t, db, "--listen", listen, "--token-file", token); !regexp.MustCompile(want).MatchString(line) {
			t.Errorf("--listen %s printed %q, want %s", listen, line, want)
		}
	}
}
