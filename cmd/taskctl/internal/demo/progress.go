package demo

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"golang.org/x/term"
)

// demoMoment is how far the demo has come.
type demoMoment struct {
	total   int64         // tasks to push in all
	pushed  int64         // tasks pushed so far
	settled int64         // tasks that reached their final state
	waiting int64         // tasks of demo.paused that wait for it to resume
	paused  bool          // demo.paused is still paused
	elapsed time.Duration // since the first push
}

// demoProgress shows the demo's progress on stderr: milestones, and on a
// terminal a line redrawn as the work goes on.
type demoProgress interface {
	phase(format string, args ...any)
	update(m demoMoment)
	close()
}

// newDemoProgress returns a progress bar when w is a terminal, plain
// milestone lines otherwise.
func newDemoProgress(w io.Writer) demoProgress {
	if output.IsTerminal(w) {
		return &demoBar{w: w, width: demoTerminalWidth(w)}
	}
	return demoLines{w: w}
}

// demoLines writes the milestones only, a line each.
type demoLines struct{ w io.Writer }

// phase writes a milestone.
func (l demoLines) phase(format string, args ...any) {
	fmt.Fprintf(l.w, "demo: "+format+"\n", args...)
}

// update shows nothing: a line per moment would flood a log.
func (demoLines) update(demoMoment) {}

// close has nothing to take away.
func (demoLines) close() {}

// demoBar draws a progress line under the milestones.
type demoBar struct {
	w     io.Writer
	width int    // of the terminal: a longer line would wrap and stay behind
	last  string // the line drawn last, drawn again under a milestone
}

// demoEraseLine takes the cursor back to the start of the line and clears it.
const demoEraseLine = "\r\x1b[K"

// phase writes a milestone above the progress line.
func (b *demoBar) phase(format string, args ...any) {
	fmt.Fprintf(b.w, demoEraseLine+"demo: "+format+"\n%s", append(args, b.last)...)
}

// update draws the progress line again.
func (b *demoBar) update(m demoMoment) {
	b.last = output.Clip(demoRenderMoment(m, min(demoBarWidth, max(10, b.width/4))), b.width-1)
	fmt.Fprint(b.w, demoEraseLine+b.last)
}

// close takes the progress line off the screen.
func (b *demoBar) close() {
	fmt.Fprint(b.w, demoEraseLine)
	b.last = ""
}

// demoBarWidth is the number of cells of the bar, at most: a quarter of
// the terminal's width, at least ten.
const demoBarWidth = 30

// demoRenderMoment writes m as one line: a bar of cells for the settled
// tasks, and the figures.
func demoRenderMoment(m demoMoment, cells int) string {
	filled := 0
	if m.total > 0 {
		filled = int(min(m.settled, m.total) * int64(cells) / m.total)
	}
	line := fmt.Sprintf("[%s%s] %d/%d settled, %d pushed, %.1fs",
		strings.Repeat("█", filled), strings.Repeat("░", cells-filled),
		m.settled, m.total, m.pushed, m.elapsed.Seconds())
	if m.paused {
		line += fmt.Sprintf(", %d waiting in %s (paused)", m.waiting, demoPaused)
	}
	return line
}

// demoTerminalWidth returns the width of the terminal w, 80 when it cannot
// tell.
func demoTerminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 1 {
			return width
		}
	}
	return 80
}
