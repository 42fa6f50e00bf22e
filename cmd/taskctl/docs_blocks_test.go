package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/mdblocks"
)

// TestDocsShellBlocks runs every sh block of README.md and docs/*.md that
// has a taskctl command, line by line in order, as a user would type it:
// in a working directory of its own, on a database of the test's own (on
// SQLite, and on PostgreSQL), in place of the URL the block names. Every
// command must exit 0; a line the test does not know how to run fails it,
// so that a new block cannot drift unchecked.
func TestDocsShellBlocks(t *testing.T) {
	blocks := 0
	for _, file := range docFiles(t) {
		for _, block := range shellBlocks(t, file) {
			if !runsTaskctl(block) {
				continue // internal/docs checks the blocks of other commands
			}
			blocks++
			for _, db := range backends(false) {
				t.Run(db.name+"/"+block[0].Where(), func(t *testing.T) {
					t.Parallel()
					s := &shellSession{t: t, dir: t.TempDir(), database: db.url(t)}
					for _, l := range block {
						s.run(l)
					}
				})
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no sh block with a taskctl command found in README.md and docs/*.md")
	}
}

// docFiles returns the Markdown files whose blocks are checked.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, "../../README.md")
}

// A shellLine is one command line of a sh block (see mdblocks).
type shellLine = mdblocks.Line

// shellBlocks returns the sh blocks of file, each as its lines, blank
// lines left out.
func shellBlocks(t *testing.T, file string) [][]shellLine {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(file, "../../")
	return mdblocks.Shell(name, string(text))
}

// taskctlCommand tells a line that runs taskctl, alone or in a pipeline.
var taskctlCommand = regexp.MustCompile(`(^|[|&]\s*)taskctl\s`)

// runsTaskctl reports whether a block has a line that runs taskctl: such
// a block is this test's to run (internal/docs leaves it to this one).
func runsTaskctl(block []shellLine) bool {
	return slices.ContainsFunc(block, func(l shellLine) bool { return taskctlCommand.MatchString(l.Text) })
}

// A shellSession runs a block's lines one after the other in one working
// directory, on one database.
type shellSession struct {
	t        *testing.T
	dir      string
	database string
}

// run runs one line: its commands joined by && in turn, each of which
// must succeed.
func (s *shellSession) run(l shellLine) {
	s.t.Helper()
	words, comment, err := shellWords(l.Text)
	if err != nil {
		s.t.Errorf("%s: %v: %s", l.Where(), err, l.Text)
		return
	}
	if len(words) == 0 {
		return // a comment: prose
	}
	for _, cmd := range splitOn(words, "&&") {
		if err := s.command(cmd, comment); err != nil {
			s.t.Errorf("%s: %s\n  %v", l.Where(), l.Text, err)
			return
		}
	}
	s.t.Logf("%s: ran %s", l.Where(), l.Text)
}

// command runs one command of a line: a pipeline of stages, maybe with
// its output redirected. The comment of the line says what a file it
// reads holds.
func (s *shellSession) command(words []string, comment string) error {
	stages := splitOn(words, "|")
	names := make([]string, len(stages))
	for i, st := range stages {
		names[i] = first(st)
	}
	switch strings.Join(names, " | ") {
	case "taskctl":
		return s.taskctl(stages[0], "", comment)
	case "printf | taskctl":
		in, err := printfText(stages[0][1:])
		if err != nil {
			return err
		}
		return s.taskctl(stages[1], in, comment)
	case "taskctl | jq":
		return s.taskctlToJQ(stages[0], stages[1], comment)
	case "export":
		return exportsDatabase(words)
	case "openssl":
		return s.opensslRand(words)
	}
	return fmt.Errorf("TestDocsShellBlocks does not know how to run this line: add a check for it")
}

// first returns a command's first word, "" for none.
func first(words []string) string {
	if len(words) == 0 {
		return ""
	}
	return words[0]
}

// splitOn splits words at every operator op.
func splitOn(words []string, op string) [][]string {
	var out [][]string
	start := 0
	for i, w := range words {
		if w == op {
			out = append(out, words[start:i])
			start = i + 1
		}
	}
	return append(out, words[start:])
}

// shellWords splits a line as sh does for the lines of the docs: words,
// quoted with '…' or "…" (\" and \\ within), operators |, &&, > as words
// of their own, and a # comment, which it returns apart. Expansions ($)
// are not done: the docs' blocks have none.
func shellWords(line string) (words []string, comment string, err error) {
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return words, strings.TrimSpace(line[i+1:]), nil
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, "", errors.New("unterminated '")
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+1+end
		case c == '"':
			n, err := doubleQuoted(line[i+1:], &word)
			if err != nil {
				return nil, "", err
			}
			inWord, i = true, i+n
		case c == '|' || c == '>' || strings.HasPrefix(line[i:], "&&"):
			flush()
			op := string(c)
			if c == '&' {
				op, i = "&&", i+1
			}
			words = append(words, op)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, "", nil
}

// doubleQuoted writes the text of a "…" string that s starts within (after
// its opening quote) to word, and returns how many bytes it took with the
// closing quote.
func doubleQuoted(s string, word *strings.Builder) (int, error) {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			return i + 1, nil
		case s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			word.WriteByte(s[i+1])
			i++
		default:
			word.WriteByte(s[i])
		}
	}
	return 0, errors.New(`unterminated "`)
}

// printfText is what printf prints for args: one format without
// conversions, whose escapes \n, \t and \\ it turns into their characters.
func printfText(args []string) (string, error) {
	if len(args) != 1 || strings.Contains(strings.ReplaceAll(args[0], "%%", ""), "%") {
		return "", fmt.Errorf("printf %q: only one format without conversions is supported; add support for it", args)
	}
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`, "%%", "%").Replace(args[0]), nil
}

// exportsDatabase checks an export line: it sets $TASKREPO_DATABASE_URL,
// which taskctl reads. Every command of the session already runs with it
// set to the test's database (a line before it names its database with -d).
func exportsDatabase(words []string) error {
	if len(words) != 2 || !strings.HasPrefix(words[1], "TASKREPO_DATABASE_URL=") {
		return fmt.Errorf("only export TASKREPO_DATABASE_URL=URL is understood; add a check for this line")
	}
	return nil
}

// opensslRand runs openssl rand -hex N > FILE, the making of a token: with
// openssl when the machine has it, else with the same output made here.
func (s *shellSession) opensslRand(words []string) error {
	if len(words) != 6 || words[1] != "rand" || words[2] != "-hex" || words[4] != ">" {
		return fmt.Errorf("only openssl rand -hex N > FILE is understood; add a check for this line")
	}
	n, err := strconv.Atoi(words[3])
	if err != nil {
		return err
	}
	var out []byte
	if _, err := exec.LookPath("openssl"); err == nil {
		cmd := exec.Command("openssl", words[1:4]...)
		if out, err = cmd.Output(); err != nil {
			return fmt.Errorf("openssl: %v", err)
		}
	} else {
		out = []byte(hex.EncodeToString(randomBytes(n)) + "\n")
	}
	return os.WriteFile(filepath.Join(s.dir, words[5]), out, 0o600)
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// taskctl runs a taskctl command on the session's database, with stdin;
// serve and top on a terminal are run as their own kinds of commands.
func (s *shellSession) taskctl(words []string, stdin, comment string) error {
	args := s.args(words[1:])
	switch {
	case subcommand(args) == "serve":
		return s.serve(args)
	case subcommand(args) == "top" && !slices.Contains(args, "--once") && !slices.Contains(args, "--json"):
		return s.top(args)
	}
	if err := s.makeFiles(args, comment); err != nil {
		return err
	}
	_, err := s.exec(args, stdin)
	return err
}

// taskctlToJQ runs a taskctl command piped to jq: the output must be JSON,
// and jq (when the machine has it) must take it with the block's filter.
func (s *shellSession) taskctlToJQ(taskctlWords, jq []string, comment string) error {
	args := s.args(taskctlWords[1:])
	if err := s.makeFiles(args, comment); err != nil {
		return err
	}
	out, err := s.exec(args, "")
	if err != nil {
		return err
	}
	if !json.Valid([]byte(out)) {
		return fmt.Errorf("the output that goes to jq is not JSON:\n%s", out)
	}
	jqPath, err := exec.LookPath("jq")
	if jqPath == "" || errors.Is(err, exec.ErrNotFound) {
		return nil // without jq, JSON is what can be checked: the filter is jq's
	}
	cmd := exec.Command(jqPath, jq[1:]...)
	cmd.Stdin = strings.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("jq: %v\n%s", err, msg)
	}
	return nil
}

// args returns taskctl's arguments with the database the block names
// replaced by the session's, and any address to listen on by a free port
// of the loopback interface.
func (s *shellSession) args(words []string) []string {
	args := slices.Clone(words)
	for i, a := range args {
		switch {
		case (a == "-d" || a == "--database") && i+1 < len(args):
			args[i+1] = s.database
		case strings.HasPrefix(a, "--database=") || strings.HasPrefix(a, "-d="):
			args[i] = "--database=" + s.database
		case a == "--listen" && i+1 < len(args):
			args[i+1] = "127.0.0.1:0"
		}
	}
	return args
}

// subcommand returns the first word of args that is not a flag.
func subcommand(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// exec runs taskctl with args in the session's directory and returns
// its output; it fails unless taskctl exits 0.
func (s *shellSession) exec(args []string, stdin string) (string, error) {
	out := taskctlIn(s.t, s.dir, s.database, stdin, args...)
	if out.code != 0 {
		return "", fmt.Errorf("exit %d\nstdout: %s\nstderr: %s", out.code, out.stdout, out.stderr)
	}
	return out.stdout, nil
}

// backlogRows is how many tasks the files pushed with --file hold: enough
// that the sequence a block's show names (1234) is a task of the topic,
// since the block is one session on one database.
const backlogRows = 1300

// headerComment finds the header of a file in a line's comment.
var headerComment = regexp.MustCompile(`header: ([a-z_,]+)`)

// makeFiles writes the CSV file that args push with --file (-f), which the
// user would have: with the header the line's comment names.
func (s *shellSession) makeFiles(args []string, comment string) error {
	i := slices.IndexFunc(args, func(a string) bool { return a == "--file" || a == "-f" })
	if i < 0 || i+1 == len(args) || args[i+1] == "-" {
		return nil
	}
	m := headerComment.FindStringSubmatch(comment)
	if m == nil {
		return fmt.Errorf("the line pushes %s: say its header in a comment (# header: identifier,input)", args[i+1])
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	header := strings.Split(m[1], ",")
	w.Write(header)
	for n := 1; n <= backlogRows; n++ {
		row, err := backlogRow(header, n)
		if err != nil {
			return err
		}
		w.Write(row)
	}
	w.Flush()
	return os.WriteFile(filepath.Join(s.dir, args[i+1]), b.Bytes(), 0o600)
}

// backlogRow returns the nth row of a backlog file with header.
func backlogRow(header []string, n int) ([]string, error) {
	row := make([]string, len(header))
	for i, column := range header {
		switch column {
		case "identifier":
			row[i] = fmt.Sprintf("backlog-%d", n)
		case "input":
			row[i] = fmt.Sprintf(`{"n": %d}`, n)
		case "reference", "not_before":
			// empty: none, as most rows of a backlog
		default:
			return nil, fmt.Errorf("a backlog file's column %q is unknown to the test; add it", column)
		}
	}
	return row, nil
}

// top runs taskctl top on a terminal, as a user does: it must draw the
// session's topics and quit on q with exit 0.
func (s *shellSession) top(args []string) error {
	term := onTerminal(s.t, s.database, args...)
	term.expectWords("TOPIC ACTIVATION", "q to quit")
	term.send("q")
	if code := term.wait(); code != 0 {
		return fmt.Errorf("top exited %d after q; it showed:\n%s", code, term.text())
	}
	return nil
}

// serveAddress finds the port in the line taskctl serve prints first.
var serveAddress = regexp.MustCompile(`http://[^ ]*:([0-9]+)/`)

// serve starts taskctl serve with args in the session's directory (on a
// free port: see args), waits until it answers HTTP, and stops it with
// SIGINT, as Ctrl-C would: it must exit 0.
func (s *shellSession) serve(args []string) error {
	if !slices.Contains(args, "--listen") {
		args = append(args, "--listen", "127.0.0.1:0") // not 8080, which may be taken
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandPatience)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "TASKREPO_DATABASE_URL="+s.database)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	answerErr := answers(line)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("serve ended with %v (it gets SIGINT once it answered, or failed to)\nstdout: %s\nstderr: %s", err, line, stderr.String())
	}
	return answerErr
}

// answers checks that the dashboard whose address line is printed
// answers an HTTP request without a server error.
func answers(line string) error {
	m := serveAddress.FindStringSubmatch(line)
	if m == nil {
		return fmt.Errorf("serve printed %q, not its address", line)
	}
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://127.0.0.1:" + m[1] + "/")
	if err != nil {
		return fmt.Errorf("the dashboard at %s does not answer: %v", m[1], err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("the dashboard answered %s", resp.Status)
	}
	return nil
}
