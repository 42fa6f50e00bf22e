package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/mdblocks"
	"github.com/taskrepo/taskrepo/taskproc"
)

// root is the repository's root, where README's commands run.
const root = "../.."

// TestShellBlocksName checks the lines of every sh block of README.md and
// docs/*.md without running them (they take minutes): the packages of a
// go command exist, its -tags and -run pick a test that exists, the flags
// it passes to a test binary or a program are defined there, the
// environment variables it sets are read there, and make targets exist.
// The blocks with a taskctl command are run by cmd/taskctl's
// TestDocsShellBlocks instead. A line of any other kind fails the test, so
// that a new block cannot drift unchecked.
func TestShellBlocksName(t *testing.T) {
	lines := 0
	for file, text := range markdownFiles(t) {
		for _, block := range shBlocks(file, text) {
			if slices.ContainsFunc(block, func(l docLine) bool { return taskctlCommand.MatchString(l.Text) }) {
				continue // cmd/taskctl's TestDocsShellBlocks runs it
			}
			for _, l := range block {
				lines++
				where := fmt.Sprintf("%s:%d", strings.TrimPrefix(l.File, root+"/"), l.Line)
				t.Run(where, func(t *testing.T) {
					t.Parallel() // each go list takes a moment
					if err := checkShellLine(l.Text); err != nil {
						t.Errorf("%s: %s\n  %v", where, l.Text, err)
					}
				})
			}
		}
	}
	if lines == 0 {
		t.Fatal("no sh line found in README.md and docs/*.md outside the blocks of taskctl")
	}
	t.Logf("%d sh lines checked", lines)
}

// taskctlCommand tells a line that runs taskctl, alone or in a pipeline:
// the same rule as cmd/taskctl's TestDocsShellBlocks, which runs a block
// with such a line.
var taskctlCommand = regexp.MustCompile(`(^|[|&]\s*)taskctl\s`)

// A docLine is one command line of a sh block (see mdblocks).
type docLine = mdblocks.Line

// shBlocks returns the sh blocks of a Markdown file's text.
func shBlocks(file, text string) [][]docLine { return mdblocks.Shell(file, text) }

// envAssignment tells a word that sets an environment variable.
var envAssignment = regexp.MustCompile(`^([A-Z_][A-Z0-9_]*)=`)

// checkShellLine checks one line: [cd DIR &&] [NAME=VALUE...] go|make ….
// A line that is only a comment is prose.
func checkShellLine(line string) error {
	words, err := splitWords(line)
	if err != nil || len(words) == 0 {
		return err
	}
	dir := root
	if len(words) > 3 && words[0] == "cd" && words[2] == "&&" {
		dir = filepath.Join(root, words[1])
		words = words[3:]
	}
	if slices.Contains(words, "&&") || slices.Contains(words, "|") || slices.Contains(words, ">") {
		return errors.New("a line of several commands: add a check for it")
	}
	var env []string
	for len(words) > 0 && envAssignment.MatchString(words[0]) {
		env = append(env, envAssignment.FindStringSubmatch(words[0])[1])
		words = words[1:]
	}
	switch {
	case len(words) > 1 && words[0] == "go":
		return checkGo(dir, words[1], words[2:], env)
	case len(words) > 1 && words[0] == "make" && len(env) == 0:
		return checkMake(dir, words[1:])
	}
	return errors.New("TestShellBlocksName does not know this command: add a check for it")
}

// splitWords splits a line as sh does for the docs' lines: words, quoted
// with '…' or "…", the operators |, && and > as words of their own, a #
// comment left out. Expansions ($) are not done: the docs have none.
func splitWords(line string) ([]string, error) {
	var words []string
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
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			return words, nil
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unterminated %c", c)
			}
			word.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+1+end
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
	return words, nil
}

// checkGo checks go get, go run and go test, run in dir with the
// environment variables env set.
func checkGo(dir, sub string, args, env []string) error {
	switch sub {
	case "get":
		return checkGoGet(dir, args)
	case "run", "test":
		cmd, err := parseGo(sub, args)
		if err != nil {
			return err
		}
		pkgs, err := listPackages(dir, cmd.tags, cmd.patterns)
		if err != nil {
			return err
		}
		return cmd.check(pkgs, env)
	}
	return fmt.Errorf("go %s: add a check for it", sub)
}

// checkGoGet checks that go get names the module of the repository.
func checkGoGet(dir string, args []string) error {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	path := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	if len(args) != 1 || strings.SplitN(args[0], "@", 2)[0] != path {
		return fmt.Errorf("go get %s: the module is %s", strings.Join(args, " "), path)
	}
	return nil
}

// goValueFlags are the go build and test flags of the docs that take a
// value, with a check of it (nil: any); goBoolFlags those that take none.
var (
	goValueFlags = map[string]func(string) error{
		"tags":    nil,
		"run":     func(v string) error { _, err := regexp.Compile(v); return err },
		"timeout": func(v string) error { _, err := time.ParseDuration(v); return err },
		"count":   func(v string) error { _, err := strconv.Atoi(v); return err },
		"vet": func(v string) error {
			if v != "off" {
				return fmt.Errorf("-vet=%s: the docs turn vet off only (CI's step vet runs it)", v)
			}
			return nil
		},
	}
	goBoolFlags = []string{"race", "v", "short", "failfast"}
)

// A goCommand is a go run or go test line, parsed.
type goCommand struct {
	sub      string
	tags     string
	run      string
	patterns []string // the packages
	flags    []string // the names of the flags given to the program or test binary
	args     []string // the program's other arguments: its subcommands
}

// parseGo parses go run or go test's arguments: go's flags and the
// packages (go run: one), then the program's or the test binary's
// arguments (go test: its flags that go does not know).
func parseGo(sub string, args []string) (*goCommand, error) {
	cmd := &goCommand{sub: sub}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if sub == "run" && len(cmd.patterns) == 1 {
			cmd.programArgs(args[i:])
			break
		}
		if !strings.HasPrefix(a, "-") {
			if len(cmd.flags) == 0 { // else the value of a test binary's flag
				cmd.patterns = append(cmd.patterns, a)
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch check, valued := goValueFlags[name]; {
		case valued:
			if !hasValue {
				if i++; i == len(args) {
					return nil, fmt.Errorf("-%s without its value", name)
				}
				value = args[i]
			}
			if check != nil {
				if err := check(value); err != nil {
					return nil, fmt.Errorf("-%s %s: %v", name, value, err)
				}
			}
			cmd.set(name, value)
		case slices.Contains(goBoolFlags, name):
		case sub == "test" && len(cmd.patterns) > 0:
			cmd.flags = append(cmd.flags, name)
		default:
			return nil, fmt.Errorf("go %s flag %s: add it to goValueFlags or goBoolFlags", sub, a)
		}
	}
	if len(cmd.patterns) == 0 {
		return nil, fmt.Errorf("go %s names no package", sub)
	}
	return cmd, nil
}

// programArgs records the arguments of the program go run runs: its
// flags, and its subcommands. A word after a flag without = is taken for
// the flag's value.
func (cmd *goCommand) programArgs(args []string) {
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "-"):
			cmd.args = append(cmd.args, args[i])
		case !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			cmd.flags = append(cmd.flags, name)
			i++
		default:
			cmd.flags = append(cmd.flags, name)
		}
	}
}

// set records the value of a go flag that the check needs.
func (cmd *goCommand) set(name, value string) {
	switch name {
	case "tags":
		cmd.tags = value
	case "run":
		cmd.run = value
	}
}

// A goPackage is what go list says of a package.
type goPackage struct {
	Dir                                string
	GoFiles, TestGoFiles, XTestGoFiles []string
}

// listPackages lists the packages of patterns as go would, in dir with
// tags: an error, or a pattern matching nothing, is an error.
func listPackages(dir, tags string, patterns []string) ([]goPackage, error) {
	args := append([]string{"list", "-json=Dir,GoFiles,TestGoFiles,XTestGoFiles", "-tags=" + tags}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if complaint := withoutDownloads(stderr.String()); err != nil || complaint != "" {
		return nil, fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, complaint)
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(&stdout); dec.More(); {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// withoutDownloads returns what go printed on stderr but the lines that
// say it downloads a module: on a machine whose module cache is cold, the
// first go list of the bench module prints them, and they are no fault.
func withoutDownloads(stderr string) string {
	var kept []string
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "go: downloading ") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "")
}

// sources returns the text of the packages' files: with the test files
// or without.
func sources(pkgs []goPackage, tests bool) (string, error) {
	var b strings.Builder
	for _, p := range pkgs {
		files := p.GoFiles
		if tests {
			files = append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...)
		}
		for _, f := range files {
			text, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				return "", err
			}
			b.Write(text)
		}
	}
	return b.String(), nil
}

// testFunc finds the names of a file's test functions.
var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(`)

// check checks a parsed go run or go test against its packages' files:
// -run picks a test, flags, environment variables and subcommands are
// defined there.
func (cmd *goCommand) check(pkgs []goPackage, env []string) error {
	code, err := sources(pkgs, cmd.sub == "test")
	if err != nil {
		return err
	}
	if cmd.sub == "test" {
		lib, err := sources(pkgs, false)
		if err != nil {
			return err
		}
		code += lib // a test binary has the package's flags too
	}
	if cmd.run != "" {
		if err := checkRun(cmd.run, code); err != nil {
			return err
		}
	}
	for _, name := range cmd.flags {
		if !regexp.MustCompile(flagDefinition + regexp.QuoteMeta(name) + `"`).MatchString(code) {
			return fmt.Errorf("flag -%s: defined nowhere in the packages' files", name)
		}
	}
	for _, name := range env {
		if !strings.Contains(code, `"`+name+`"`) {
			return fmt.Errorf("%s: read nowhere in the packages' files", name)
		}
	}
	for _, arg := range cmd.args {
		if !regexp.MustCompile(`Use:\s*"` + regexp.QuoteMeta(arg) + `[ "]`).MatchString(code) {
			return fmt.Errorf("%s: no command of the program is called so", arg)
		}
	}
	return nil
}

// flagDefinition starts the definition of a flag with the flag package,
// or with cobra's pflag (methods named alike), up to its name.
const flagDefinition = `\b(Bool|String|Int|Int64|Uint|Uint64|Float64|Duration|Func|BoolFunc|TextVar|Var|StringSlice|StringArray|Count)(Var)?P?\(\s*(&[^,()]+,\s*)?"`

// checkRun checks that the -run pattern picks a test of code (of its top
// level: the part before a /).
func checkRun(run, code string) error {
	top, _, _ := strings.Cut(run, "/")
	re, err := regexp.Compile(top)
	if err != nil {
		return err
	}
	for _, m := range testFunc.FindAllStringSubmatch(code, -1) {
		if re.MatchString(m[1]) {
			return nil
		}
	}
	return fmt.Errorf("-run %s: no test of the packages (with their -tags) matches", run)
}

// makeTarget finds the targets of a Makefile.
var makeTarget = regexp.MustCompile(`(?m)^(\w[\w.-]*):`)

// checkMake checks that the targets exist in dir's Makefile.
func checkMake(dir string, targets []string) error {
	text, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	if err != nil {
		return err
	}
	var have []string
	for _, m := range makeTarget.FindAllStringSubmatch(string(text), -1) {
		have = append(have, m[1])
	}
	for _, target := range targets {
		if strings.HasPrefix(target, "-") || !slices.Contains(have, target) {
			return fmt.Errorf("make %s: the Makefile has no such target (it has %s)", target, strings.Join(have, ", "))
		}
	}
	return nil
}

// jsonBlock finds the JSON code blocks of a Markdown file.
var jsonBlock = regexp.MustCompile("(?ms)^```json\n(.*?)^```")

// TestJSONBlocksMatchTheCode checks every JSON block of README.md and
// docs/*.md: it parses, and it is what the code writes. A failed task's
// attempt log must be read by taskproc.Attempts and come out of
// encoding/json the same, field names and time format included. A block
// of another kind fails the test, so that it cannot drift unchecked.
func TestJSONBlocksMatchTheCode(t *testing.T) {
	blocks := 0
	for file, text := range markdownFiles(t) {
		for _, m := range jsonBlock.FindAllStringSubmatchIndex(text, -1) {
			blocks++
			where := fmt.Sprintf("%s:%d", strings.TrimPrefix(file, root+"/"), 1+strings.Count(text[:m[0]], "\n"))
			body := strings.TrimSpace(text[m[2]:m[3]])
			switch {
			case !json.Valid([]byte(body)):
				t.Errorf("%s: the block is not JSON:\n%s", where, body)
			case strings.HasPrefix(body, `{"attempts":`):
				if err := checkAttempts(body); err != nil {
					t.Errorf("%s: %v", where, err)
				}
			default:
				t.Errorf("%s: TestJSONBlocksMatchTheCode does not know this block: add a check for it:\n%s", where, body)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no JSON block found in README.md and docs/*.md")
	}
}

// checkAttempts checks a block that shows a task's attempt log: taskproc
// reads it, and the attempts it reads encode as the block writes them.
func checkAttempts(body string) error {
	attempts, ok := taskproc.Attempts(body)
	if !ok || len(attempts) == 0 {
		return fmt.Errorf("taskproc.Attempts does not read the block as an attempt log:\n%s", body)
	}
	// The key "attempts" is checked by Attempts, which needs it; the
	// fields of each attempt are encoding/json's of taskproc.Attempt.
	code, err := json.Marshal(map[string][]taskproc.Attempt{"attempts": attempts})
	if err != nil {
		return err
	}
	var have, want any
	if err := json.Unmarshal([]byte(body), &have); err != nil {
		return err
	}
	if err := json.Unmarshal(code, &want); err != nil {
		return err
	}
	if !reflect.DeepEqual(have, want) {
		return fmt.Errorf("the block is not what taskproc writes:\n block: %s\n code:  %s", body, code)
	}
	return nil
}
