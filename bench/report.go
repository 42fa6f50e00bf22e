package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// Report is the outcome of a run, written as JSON.
type Report struct {
	Date     string   `json:"date"`
	Command  string   `json:"command"`
	Quick    bool     `json:"quick"`
	Duration string   `json:"duration"`
	Machine  Machine  `json:"machine"`
	Notes    []string `json:"notes,omitempty"`
	Figures  []Figure `json:"figures"`
	// Statements are the statements of a task's life in the continuous runs,
	// for taskproc and tuned River (statements.go).
	Statements []StatementRun `json:"statements,omitempty"`
	// Failover is what the fault test of failovers measured (failover.go).
	Failover *Failover `json:"failover,omitempty"`
	// AutoFailover is what the fault test under pg_auto_failover measured
	// (autofailover.go).
	AutoFailover *AutoFailover `json:"autofailover,omitempty"`
	// Sizing is what the sizing scenario measured (sizing.go).
	Sizing *Sizing `json:"sizing,omitempty"`
	// Limits is what the limits scenario measured (limits.go).
	Limits *Limits `json:"limits,omitempty"`
}

// Machine describes where the run took place.
type Machine struct {
	CPUs      int     `json:"cpus"`
	MemoryGiB float64 `json:"memory_gib"`
	OS        string  `json:"os"`
	Go        string  `json:"go"`
	LoadAvg   string  `json:"load_average_at_start"` // /proc/loadavg: what else ran

	AutoFailover string `json:"pg_auto_failover,omitempty"` // its version, in the results of the fault test under it

	PostgreSQL string            `json:"postgresql"`
	Settings   map[string]string `json:"settings"`
}

// Figure is one line of the table. Ratio is above 1 when taskrepo does
// better: taskrepo ÷ River for figures where higher is better, River ÷
// taskrepo where lower is better, or taskrepo ÷ RatioOf's taskrepo value.
type Figure struct {
	Key      string   `json:"key"`
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Lower    bool     `json:"lower_is_better,omitempty"`
	Taskrepo *float64 `json:"taskrepo"`
	River    *float64 `json:"river"` // tuned as river bench runs it, where River fetches jobs
	// RiverDefaults is River with its default fetch settings, where River
	// fetches jobs; the ratio is always to River.
	RiverDefaults *float64 `json:"river_defaults,omitempty"`
	Ratio         *float64 `json:"ratio"`
	RatioOf       string   `json:"ratio_of,omitempty"` // empty: River
	Target        float64  `json:"target,omitempty"`   // minimum of Ratio, or of Taskrepo when Unit is "×"
	Ceiling       float64  `json:"ceiling,omitempty"`  // maximum of Taskrepo, in Unit (a latency, say)
	Pass          *bool    `json:"pass,omitempty"`
	Note          string   `json:"note,omitempty"`
}

// newReport describes the machine and the server.
func newReport(ctx context.Context, admin *pgx.Conn, cfg config) (*Report, error) {
	r := &Report{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Command: "go run . " + shellWords(os.Args[1:]),
		Quick:   cfg.quick,
		Machine: Machine{
			CPUs: runtime.NumCPU(), MemoryGiB: memoryGiB(),
			OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), LoadAvg: loadAverage(),
			Settings: map[string]string{},
		},
	}
	if cfg.notes != "" {
		r.Notes = append(r.Notes, cfg.notes)
	}
	if err := admin.QueryRow(ctx, "SELECT version()").Scan(&r.Machine.PostgreSQL); err != nil {
		return nil, err
	}
	for _, name := range []string{"fsync", "synchronous_commit", "shared_buffers", "max_wal_size", "autovacuum", "max_connections"} {
		var value string
		if err := admin.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&value); err != nil {
			return nil, err
		}
		r.Machine.Settings[name] = value
	}
	return r, nil
}

// shellWords writes args as a shell would read them back: an empty
// argument or one with a space or a quote in single quotes, so that the
// command in the results (and in the docs) can be run as written.
func shellWords(args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = a
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?;&|<>()") {
			words[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(words, " ")
}

// memoryGiB reads MemTotal from /proc/meminfo; 0 when unknown.
func memoryGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }() // only read
	s := bufio.NewScanner(f)
	for s.Scan() {
		var kib float64
		if n, _ := fmt.Sscanf(s.Text(), "MemTotal: %f kB", &kib); n == 1 {
			return math.Round(kib/(1<<20)*10) / 10
		}
	}
	return 0
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return firstWords(string(data), 3)
}

func (r *Report) add(f Figure) {
	if f.Taskrepo != nil && f.River != nil && f.RatioOf == "" && f.Unit != "×" && *f.Taskrepo > 0 && *f.River > 0 {
		ratio := *f.Taskrepo / *f.River
		if f.Lower {
			ratio = 1 / ratio
		}
		f.Ratio = &ratio
	}
	if f.Target > 0 {
		value := f.Ratio
		if f.Unit == "×" {
			value = f.Taskrepo
		}
		if value != nil {
			pass := *value >= f.Target
			f.Pass = &pass
		}
	}
	if f.Ceiling > 0 && f.Taskrepo != nil {
		pass := *f.Taskrepo <= f.Ceiling && (f.Pass == nil || *f.Pass)
		f.Pass = &pass
	}
	r.Figures = append(r.Figures, f)
}

// value returns a pointer to v, or nil for a NaN.
func value(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// rateOf returns the throughput of a result, nil for none.
func rateOf(r *result) *float64 {
	if r == nil {
		return nil
	}
	return value(r.rate())
}

// rivers are River's results in a scenario: tuned as river bench runs it,
// the reference of the ratios, and with its default fetch settings. Either
// may be nil.
type rivers struct{ tuned, defaults *result }

// note names the two Rivers for a figure's note.
func (rs rivers) note() string {
	note := "River: " + riverTuned.String() + " (as river bench runs it)"
	if rs.defaults != nil {
		note += "; River defaults: " + riverDefaults.String()
	}
	return note
}

// throughput adds the tasks/s of each side; the Rivers may be nil.
func (r *Report) throughput(key, name string, task *result, river rivers, target float64, note string) {
	r.add(Figure{Key: key, Name: name, Unit: "tasks/s", Taskrepo: rateOf(task), River: rateOf(river.tuned),
		RiverDefaults: rateOf(river.defaults), Target: target, Note: joinNotes(note, task, river)})
}

// joinNotes adds the notes of the results to note.
func joinNotes(note string, task *result, river rivers) string {
	parts := []string{note}
	for i, res := range []*result{task, river.tuned, river.defaults} {
		if res != nil && res.note != "" {
			parts = append(parts, []string{"taskrepo", "River", "River defaults"}[i]+" "+res.note)
		}
	}
	return strings.Join(parts, "; ")
}

// relative adds a taskrepo-only throughput and its ratio to ref, the
// taskrepo burn-down of an empty table.
func (r *Report) relative(key, name string, task, ref *result, note string) {
	f := Figure{Key: key, Name: name, Unit: "tasks/s", Taskrepo: rateOf(task), RatioOf: "burndown", Note: joinNotes(note, task, rivers{})}
	if ref != nil && ref.rate() > 0 {
		f.Ratio = value(task.rate() / ref.rate())
	}
	r.add(f)
}

// relativeTo adds a taskrepo throughput and its ratio to ref, the same
// scenario's taskrepo throughput without what the figure adds (a
// capacity, say); target is the least ratio wanted.
func (r *Report) relativeTo(key, name string, task, ref *result, target float64, note string) {
	f := Figure{Key: key, Name: name, Unit: "tasks/s", Taskrepo: rateOf(task), RatioOf: "without",
		Target: target, Note: joinNotes(note, task, rivers{})}
	if ref != nil && ref.rate() > 0 {
		f.Ratio = value(task.rate() / ref.rate())
	}
	r.add(f)
}

// growth adds the burn-down next to old rows as a share of the empty-table
// burn-down, for each side.
func (r *Report) growth(key, name string, task, river, taskRef, riverRef *result, target float64) {
	share := func(res, ref *result) *float64 {
		if res == nil || ref == nil || ref.rate() == 0 {
			return nil
		}
		return value(res.rate() / ref.rate())
	}
	note := ""
	if taskRef == nil {
		note = "run the burndown scenario too for this figure"
	}
	r.add(Figure{Key: key, Name: name, Unit: "×", Taskrepo: share(task, taskRef), River: share(river, riverRef),
		Target: target, Note: note})
}

// share adds a taskrepo throughput as a share of another taskrepo
// throughput of the same run, ref.
func (r *Report) share(key, name string, task, ref *result, target float64, note string) {
	f := Figure{Key: key, Name: name, Unit: "×", Target: target, Note: note}
	if task != nil && ref != nil && ref.rate() > 0 {
		f.Taskrepo = value(task.rate() / ref.rate())
	}
	r.add(f)
}

// costs adds the server's CPU and WAL per 1,000 tasks; cpuTarget is the
// least ratio of CPU (River's ÷ taskrepo's) wanted, 0 for none.
func (r *Report) costs(key, name string, task *result, river rivers, cpuTarget float64) {
	per := func(res *result, v func(cost) float64) *float64 {
		if res == nil || res.tasks == 0 {
			return nil
		}
		return value(v(res.cost) / float64(res.tasks) * 1000)
	}
	cpu := func(c cost) float64 { return c.CPUSeconds * 1000 }
	wal := func(c cost) float64 { return c.WALBytes / 1024 }
	cpuNote := "CPU of the scenario database's server processes (/proc)"
	if task != nil && math.IsNaN(task.cost.CPUSeconds) {
		cpuNote = "n/a: the server's processes are not in this machine's /proc (is the server elsewhere?)"
	}
	r.add(Figure{Key: key + "_cpu", Name: name + ": server CPU per 1k tasks", Unit: "ms", Lower: true,
		Taskrepo: per(task, cpu), River: per(river.tuned, cpu), RiverDefaults: per(river.defaults, cpu), Target: cpuTarget, Note: cpuNote})
	r.add(Figure{Key: key + "_wal", Name: name + ": WAL per 1k tasks", Unit: "KiB", Lower: true,
		Taskrepo: per(task, wal), River: per(river.tuned, wal), RiverDefaults: per(river.defaults, wal),
		Note: "WAL insert position of the whole server"})
}

// latency adds push → start and push → completed percentiles, and commit
// → start where the sides know their pushes' commits. targets and ceilings
// hold the targets of taskrepo's figures, by "start_p99" and the like: the
// least ratio to tuned River, and the most in ms.
func (r *Report) latency(key, name string, task *result, river rivers, targets, ceilings map[string]float64) {
	kinds := []struct {
		key, name  string
		done       bool // from the done latencies, else the start ones
		fromCommit bool
	}{{"start", "push → start", false, false}, {"done", "push → completed", true, false}, {"commit_start", "commit → start", false, true}}
	for _, kind := range kinds {
		for _, p := range []float64{50, 95, 99} {
			pick := func(res *result) *float64 {
				if res == nil {
					return nil
				}
				l := res.start
				if kind.done {
					l = res.done
				}
				if v, ok := l.percentile(p, kind.fromCommit); ok {
					return &v
				}
				return nil
			}
			suffix := fmt.Sprintf("%s_p%.0f", kind.key, p)
			f := Figure{Key: key + "_" + suffix, Unit: "ms", Lower: true,
				Name:     fmt.Sprintf("%s: %s p%.0f", name, kind.name, p),
				Taskrepo: pick(task), River: pick(river.tuned), RiverDefaults: pick(river.defaults),
				Target: targets[suffix], Ceiling: ceilings[suffix]}
			if f.Taskrepo == nil && f.River == nil {
				continue // a run that notes no commits
			}
			r.add(f)
		}
	}
}

// settling adds, for a runtime's side and River's, the time from a
// handler's return to its result's commit (see settling): the delay that a
// result written in batches pays for its fewer statements.
func (r *Report) settling(key, name string, proc *result, river rivers) {
	for _, p := range []float64{50, 99} {
		pick := func(res *result) *float64 {
			if res == nil {
				return nil
			}
			if v, ok := res.settled.percentile(p); ok {
				return &v
			}
			return nil
		}
		f := Figure{Key: fmt.Sprintf("%s_settle_p%.0f", key, p), Unit: "ms", Lower: true,
			Name:     fmt.Sprintf("%s: handler return → result committed p%.0f", name, p),
			Taskrepo: pick(proc), River: pick(river.tuned), RiverDefaults: pick(river.defaults)}
		if f.Taskrepo != nil || f.River != nil {
			r.add(f)
		}
	}
}

// backlog adds how fast the backlog of a continuous run grew within its
// window (tasks pushed less tasks completed, per second), the backlog at
// the window's end and how long its drain took: beside the latency, it
// says whether a side's latency will keep growing with the length of the
// run.
func (r *Report) backlog(key, name string, task *result, river rivers) {
	pick := func(v func(w *window) float64) func(res *result) *float64 {
		return func(res *result) *float64 {
			if res == nil || res.run == nil {
				return nil
			}
			return value(v(res.run))
		}
	}
	for _, f := range []struct {
		key, name, unit string
		v               func(w *window) float64
	}{
		{"backlog_growth", "backlog growth within the window", "tasks/s",
			func(w *window) float64 { return float64(w.pushed-w.inWindow) / w.length.Seconds() }},
		{"backlog", "backlog at the window's end", "tasks", func(w *window) float64 { return float64(w.pushed - w.inWindow) }},
		{"drain", "drain of the backlog after the window", "s", func(w *window) float64 { return w.drain.Seconds() }},
	} {
		get := pick(f.v)
		r.add(Figure{Key: key + "_" + f.key, Name: name + ": " + f.name, Unit: f.unit, Lower: true,
			Taskrepo: get(task), River: get(river.tuned), RiverDefaults: get(river.defaults)})
	}
}

// statements keeps the statements of one side's run, when they were read.
func (r *Report) statements(run, side string, res *result) {
	if res == nil || res.stmts == nil {
		return
	}
	s := *res.stmts
	s.Run, s.Side = run, side
	r.Statements = append(r.Statements, s)
}

// finish adds the notes every run has and reports the run.
func (b *bench) finish(cfg config) error {
	b.report.Notes = append(b.report.Notes,
		"ratio > 1 means taskrepo does better; growth and trap ratios compare with taskrepo's own empty-table burn-down",
		"River works jobs tuned as river bench runs it ("+riverTuned.String()+"), the River of every ratio; "+
			"River defaults has River's default fetch settings ("+riverDefaults.String()+")",
		"WAL is counted for the whole server: anything else writing at the same time adds to it")
	if cfg.json != "" {
		if err := writeJSON(cfg.json, b.report); err != nil {
			return err
		}
	}
	return present(cfg, b.report)
}

// replay presents the results of an earlier run.
func replay(cfg config) error {
	data, err := os.ReadFile(cfg.replay)
	if err != nil {
		return err
	}
	r, err := parseReport(data)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.replay, err)
	}
	if len(cfg.docs) > 0 {
		return updateDocs(cfg.docs, r, cfg.check)
	}
	return present(cfg, r)
}

// parseReport reads a report written as JSON.
func parseReport(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// present prints the table, draws the chart and compares with the baseline.
func present(cfg config, r *Report) error {
	printTable(os.Stdout, r)
	if cfg.markdown != "" {
		if err := writeMarkdown(cfg.markdown, r); err != nil {
			return err
		}
	}
	if cfg.chart != "" {
		if err := drawChart(cfg.chart, r); err != nil {
			return err
		}
	}
	return compareBaseline(os.Stdout, cfg, r)
}

// printTable writes the figures as an aligned table, then their notes.
func printTable(w io.Writer, r *Report) {
	fmt.Fprintf(w, "\ntaskrepo vs River %s, %d CPUs, %s, %s\n\n", r.Date, r.Machine.CPUs, firstWords(r.Machine.PostgreSQL, 2), r.Duration)
	width := 0
	for _, f := range r.Figures {
		width = max(width, utf8.RuneCountInString(f.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tunit\ttaskrepo\tRiver\tRiver defaults\tratio\ttarget\tverdict\t\n", width, "figure")
	for _, f := range r.Figures {
		// Padded here, the names stay left-aligned in a right-aligned table.
		name := f.Name + strings.Repeat(" ", width-utf8.RuneCountInString(f.Name))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, f.Unit, number(f.Taskrepo), number(f.River),
			optional(f.RiverDefaults), ratioText(f), targetText(f), verdict(f))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, f := range r.Figures {
		if f.Note != "" {
			fmt.Fprintf(w, "  %s: %s\n", f.Name, f.Note)
		}
	}
}

// writeMarkdown writes the figures as a Markdown table, for the docs.
func writeMarkdown(path string, r *Report) error {
	var buf bytes.Buffer
	writeTable(&buf, r)
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeTable writes the figures as a Markdown table.
func writeTable(buf *bytes.Buffer, r *Report) {
	buf.WriteString("| figure | unit | taskrepo | River | River defaults | ratio | target | verdict |\n")
	buf.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, f := range r.Figures {
		fmt.Fprintf(buf, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Name, f.Unit, number(f.Taskrepo), number(f.River),
			optional(f.RiverDefaults), ratioText(f), targetText(f), verdict(f))
	}
}

func firstWords(s string, n int) string {
	words := strings.Fields(s)
	return strings.Join(words[:min(n, len(words))], " ")
}

// number writes v with precision that suits its size.
func number(v *float64) string {
	switch {
	case v == nil:
		return "n/a"
	case math.Abs(*v) >= 100:
		return fmt.Sprintf("%.0f", *v)
	case math.Abs(*v) >= 10:
		return fmt.Sprintf("%.1f", *v)
	}
	return fmt.Sprintf("%.2f", *v)
}

// optional writes v, or nothing when it is missing.
func optional(v *float64) string {
	if v == nil {
		return ""
	}
	return number(v)
}

func ratioText(f Figure) string {
	switch {
	case f.Ratio == nil:
		return ""
	case f.RatioOf != "":
		return fmt.Sprintf("%.2f× of %s", *f.Ratio, f.RatioOf)
	}
	return fmt.Sprintf("%.2f×", *f.Ratio)
}

func targetText(f Figure) string {
	var parts []string
	if f.Target > 0 {
		parts = append(parts, fmt.Sprintf("≥ %.1f×", f.Target))
	}
	if f.Ceiling > 0 {
		parts = append(parts, fmt.Sprintf("≤ %g %s", f.Ceiling, f.Unit))
	}
	return strings.Join(parts, ", ")
}

func verdict(f Figure) string {
	switch {
	case f.Pass == nil:
		return ""
	case *f.Pass:
		return "pass"
	}
	return "FAIL"
}

func writeJSON(path string, r *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
