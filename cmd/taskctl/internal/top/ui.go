package top

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
)

// topModel is the state of top's live view: the last reading, the error
// of the last attempt if it failed, and the size of the terminal.
type topModel struct {
	ctx    context.Context // ends the readings when top ends
	store  Store
	cfg    Config
	color  bool
	snap   *topSnapshot // the last reading that succeeded; nil before the first
	err    error        // why the last reading failed; nil if it did not
	fatal  error        // a bug of top's that ended the view
	errAt  time.Time    // when the failed reading began
	width  int          // of the terminal; 0 until known
	height int
}

// The messages of the live view.
type (
	topReadMsg   struct{ snap topSnapshot } // a reading succeeded
	topFailedMsg struct {                   // a reading failed
		err error
		at  time.Time
	}
	topTickMsg struct{} // time for the next reading
)

// topReadPatience bounds one reading, so that a database that stopped
// answering shows as an error instead of a frozen view.
const topReadPatience = 10 * time.Second

// Live draws the live view on the terminal stdout (keys from stdin, when
// it is a terminal) until the user quits or interrupts it; both end top
// successfully. An interrupt (ctx ends: SIGINT, SIGTERM) quits the view as
// q does, so that the terminal is restored.
func Live(ctx context.Context, s Store, cfg Config, stdin io.Reader, stdout io.Writer) error {
	reading, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel() // ends a reading still under way when the view closes
	m := topModel{ctx: reading, store: s, cfg: cfg, color: output.Colorful(stdout)}
	opts := []tea.ProgramOption{tea.WithOutput(stdout), tea.WithoutSignalHandler()}
	if output.IsTerminal(stdin) {
		opts = append(opts, tea.WithInput(stdin))
	}
	p := tea.NewProgram(m, opts...)
	go func() {
		select {
		case <-ctx.Done():
			p.Quit()
		case <-reading.Done():
		}
	}()
	final, err := p.Run()
	if err != nil {
		return fmt.Errorf("draw the live view: %w", err)
	}
	if m, ok := final.(topModel); ok && m.fatal != nil {
		return m.fatal
	}
	return nil
}

// topPanic is the error of a panic in top's own code: one line for the
// user, no stack trace, whatever goroutine it happened on.
func topPanic(v any) error { return fmt.Errorf("internal error: %v", v) }

// Init starts the first reading.
func (m topModel) Init() tea.Cmd { return m.read }

// read takes a reading; it runs outside the event loop. A panic fails the
// reading.
func (m topModel) read() (msg tea.Msg) {
	now := time.Now()
	defer func() {
		if v := recover(); v != nil {
			msg = topFailedMsg{err: topPanic(v), at: now}
		}
	}()
	ctx, cancel := context.WithTimeout(m.ctx, max(topReadPatience, m.cfg.Interval))
	defer cancel()
	snap, err := takeTopSnapshot(ctx, m.store, m.cfg, now)
	if err != nil {
		return topFailedMsg{err: err, at: now}
	}
	return topReadMsg{snap: snap}
}

// next waits an interval, then asks for the next reading.
func (m topModel) next() tea.Cmd {
	return tea.Tick(m.cfg.Interval, func(time.Time) tea.Msg { return topTickMsg{} })
}

// Update handles a message; a panic ends the view with its error.
func (m topModel) Update(msg tea.Msg) (model tea.Model, cmd tea.Cmd) {
	defer func() {
		if v := recover(); v != nil {
			m.fatal = topPanic(v)
			model, cmd = m, tea.Quit
		}
	}()
	return m.update(msg)
}

// update handles the keys, the terminal's size and the readings.
func (m topModel) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "Q", "ctrl+c", "esc":
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case topReadMsg:
		m.snap, m.err = &msg.snap, nil
		return m, m.next()
	case topFailedMsg:
		m.err, m.errAt = msg.err, msg.at
		return m, m.next()
	case topTickMsg:
		return m, m.read
	}
	return m, nil
}

// View draws the whole screen; after a panic, the panic's error.
func (m topModel) View() (v tea.View) {
	defer func() {
		if r := recover(); r != nil {
			v = tea.NewView(fmt.Sprintf("%v (q quits)", topPanic(r)))
		}
		v.AltScreen = true
	}()
	return tea.NewView(m.render())
}

// render returns the screen's text: a header, the table, the owners, and
// the error of the last reading if it failed; cut to the terminal's width.
func (m topModel) render() string {
	lines := append([]string{m.headerLine(), ""}, m.body()...)
	lines = append(lines, m.errorLines()...)
	return lipgloss.NewStyle().MaxWidth(m.width).Render(strings.Join(lines, "\n"))
}

// topErrorLines is how many lines of the screen the error of a failed
// reading may take.
const topErrorLines = 3

// errorLines says why the last reading failed, wrapped to the terminal's
// width; none if it did not fail.
func (m topModel) errorLines() []string {
	if m.err == nil {
		return nil
	}
	text := fmt.Sprintf("reading at %s failed: %s; trying again every %s",
		m.errAt.Format(time.TimeOnly), output.Clip(m.err.Error(), 1000), topDuration(m.cfg.Interval))
	if m.width > 0 {
		text = lipgloss.Wrap(text, m.width, " ")
	}
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = m.paint("9", lines[i])
	}
	return lines[:min(len(lines), topErrorLines)]
}

// headerLine says when the reading shown was taken, how to quit, and
// the database, last because a long URL is what the width may cut.
func (m topModel) headerLine() string {
	read := "reading…"
	if m.snap != nil {
		read = "read at " + m.snap.at.Format(time.TimeOnly)
	}
	return m.bold(fmt.Sprintf("taskctl top  %s  every %s  q to quit  %s", read, topDuration(m.cfg.Interval), m.store.Shown()))
}

// body is the table and the owners, or what stands in for them.
func (m topModel) body() []string {
	switch {
	case m.snap == nil:
		return []string{"reading the database…"}
	case len(m.snap.topics) == 0:
		return []string{"no topics: 'taskctl topic init NAME' adds one", "", m.snap.ownersLine(m.cfg)}
	}
	return append(m.tableLines(), "", m.snap.ownersLine(m.cfg))
}

// tableLines renders the table with as many topics as the terminal has
// room for, and a last line that says how many more there are.
func (m topModel) tableLines() []string {
	rows := m.snap.rows(m.cfg)
	more := 0
	if room := m.height - m.fixedLines(); m.height > 0 && len(rows) > room {
		keep := max(room-1, 0) // one line says how many more
		more, rows = len(rows)-keep, rows[:keep]
	}
	lines := strings.Split(output.RenderTable(topHeaders, rows, m.color), "\n")
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more topics: a taller terminal shows them", more))
	}
	return lines
}

// fixedLines counts the lines of the screen that are not topics: header,
// blank, column names, blank, owners, and the error if any.
func (m topModel) fixedLines() int {
	return 5 + len(m.errorLines())
}

// bold makes s bold when the view has colours.
func (m topModel) bold(s string) string {
	if !m.color {
		return s
	}
	return lipgloss.NewStyle().Bold(true).Render(s)
}

// paint gives s the terminal colour c when the view has colours.
func (m topModel) paint(c, s string) string {
	if !m.color {
		return s
	}
	return lipgloss.NewStyle().Foreground(lipgloss.Color(c)).Render(s)
}
