package main

import (
	"github.com/schollz/progressbar/v3"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
)

// progress is a progress bar on stderr when stderr is a terminal, and
// nothing otherwise. Its methods do nothing on a nil bar.
type progress struct{ bar *progressbar.ProgressBar }

// progress starts a bar for total units (bytes or tasks); total 0 shows a
// spinner.
func (a *app) progress(total int64, what string) *progress {
	if !output.IsTerminal(a.stderr) {
		return &progress{}
	}
	max := total
	if max <= 0 {
		max = -1
	}
	return &progress{bar: progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// done takes the bar off the screen.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
