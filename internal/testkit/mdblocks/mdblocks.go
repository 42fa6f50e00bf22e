// Package mdblocks reads the code blocks of Markdown files for the tests
// that keep README.md and docs/ true: internal/docs and cmd/taskctl's.
package mdblocks

import (
	"fmt"
	"strings"
)

// A Line is one command line of a sh block, its continuation lines
// joined, with where it starts.
type Line struct {
	File string // as the caller named it
	Line int
	Text string
}

// Where names the line as file:line.
func (l Line) Where() string { return fmt.Sprintf("%s:%d", l.File, l.Line) }

// Shell returns the sh blocks of file's text, each as its lines: blank
// lines left out, a line ending in a backslash joined with the next.
func Shell(file, text string) [][]Line {
	var blocks [][]Line
	var block []Line
	in, joining := false, false
	for i, l := range strings.Split(text, "\n") {
		switch {
		case !in && l == "```sh":
			in, block = true, []Line{}
		case in && strings.HasPrefix(l, "```"):
			in = false
			blocks = append(blocks, block)
		case in && joining:
			block[len(block)-1].Text += " " + strings.TrimSpace(strings.TrimSuffix(l, `\`))
		case in && strings.TrimSpace(l) != "":
			block = append(block, Line{File: file, Line: i + 1, Text: strings.TrimSuffix(l, `\`)})
		}
		joining = in && strings.HasSuffix(l, `\`)
	}
	return blocks
}
