package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// goBlock finds the Go code blocks of a Markdown file.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```")

// TestGoBlocksCompile checks that every Go code block of README.md and
// docs/*.md is in examples_test.go: its import lines among the file's
// imports, the rest line for line in one run of the file's lines
// (white space aside), where the compiler checks it.
func TestGoBlocksCompile(t *testing.T) {
	examples := normalized(t, "examples_test.go")
	imports := importLines(examples)
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md")
	blocks := 0
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllSubmatchIndex(text, -1) {
			blocks++
			line := 1 + strings.Count(string(text[:m[0]]), "\n")
			body := string(text[m[2]:m[3]])
			importsOf, rest := splitImports(lines(body))
			for _, imp := range importsOf {
				if !slices.Contains(imports, imp) {
					t.Errorf("%s:%d: the block imports %s, which examples_test.go does not", file, line, imp)
				}
			}
			if !contains(examples, rest) {
				t.Errorf("%s:%d: the block is not in examples_test.go as it is written; copy it there (it must compile):\n%s", file, line, body)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no Go code block found in README.md and docs/*.md")
	}
	t.Logf("%d Go blocks checked", blocks)
}

// normalized reads file as lines (see lines).
func normalized(t *testing.T, file string) []string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return lines(string(text))
}

// lines splits text into lines with their runs of white space made one
// space (indentation and gofmt's alignment aside), blank lines left out.
func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// splitImports takes the import lines (the paths, with their names) out
// of a block's lines.
func splitImports(ls []string) (imports, rest []string) {
	inBlock := false
	for _, l := range ls {
		switch {
		case l == "import (":
			inBlock = true
		case inBlock && l == ")":
			inBlock = false
		case inBlock:
			imports = append(imports, l)
		case strings.HasPrefix(l, "import "):
			imports = append(imports, strings.TrimPrefix(l, "import "))
		default:
			rest = append(rest, l)
		}
	}
	return imports, rest
}

// importLines returns the import lines of a Go file's lines.
func importLines(ls []string) []string {
	imports, _ := splitImports(ls)
	return imports
}

// contains reports whether want is a run of consecutive lines of have.
func contains(have, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for i := range have {
		if i+len(want) <= len(have) && slices.Equal(have[i:i+len(want)], want) {
			return true
		}
	}
	return false
}
