package main

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// countFlags are count's filters.
type countFlags struct {
	topic, identifier, reference string
	states                       []string
	recent                       bool
	span                         spanFlags
}

func (a *app) countCommand() *cobra.Command {
	var f countFlags
	c := &cobra.Command{
		Use:   "count",
		Short: "Count tasks per topic and state",
		Long: `count counts tasks per topic and state, over every topic unless --topic
names one. --recent counts only the newest task of each identifier.`,
		Example: `  taskctl count
  taskctl count -t orders --state failed,expired
  taskctl count --recent --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.count(cmd, f) },
	}
	c.Flags().StringVarP(&f.topic, "topic", "t", "", "only this topic (default: every topic)")
	c.Flags().StringSliceVarP(&f.states, "state", "s", nil, "only these states (comma-separated)")
	c.Flags().StringVar(&f.identifier, "identifier", "", "only tasks with this identifier")
	c.Flags().StringVar(&f.reference, "reference", "", "only tasks with this reference")
	c.Flags().BoolVar(&f.recent, "recent", false, "only the newest task of each identifier")
	f.span.add(c)
	return c
}

// countRow is one line of count's output.
type countRow struct {
	Topic string `json:"topic"`
	State string `json:"state"`
	Count int64  `json:"count"`
	Bound int64  `json:"bound"` // the highest sequence counted
}

func (a *app) count(cmd *cobra.Command, f countFlags) error {
	states, err := parseStates(f.states)
	if err != nil {
		return err
	}
	span, err := f.span.span()
	if err != nil {
		return err
	}
	snapshot := taskapi.Total
	if f.recent {
		snapshot = taskapi.Recent
	}
	var topics []string
	if f.topic != "" {
		topics = append(topics, f.topic)
	}
	s, err := a.openReadTopics(cmd.Context(), topics...)
	if err != nil {
		return err
	}
	filter := taskapi.Counting{Topic: f.topic, States: states, Identifier: f.identifier, Reference: f.reference}
	counts, err := s.Count(cmd.Context(), snapshot, filter, span)
	if err != nil {
		return err
	}
	rows := countRows(counts)
	if a.json {
		return a.printJSON(rows)
	}
	var total int64
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{r.Topic, r.State, strconv.FormatInt(r.Count, 10)}
		total += r.Count
	}
	if len(rows) > 0 {
		a.printTable([]string{"TOPIC", "STATE", "TASKS"}, cells)
	}
	a.printf("%d tasks\n", total)
	return nil
}

// countRows sorts counts by topic and state.
func countRows(counts map[string]map[taskapi.State]taskapi.Summary) []countRow {
	rows := []countRow{}
	for topic, states := range counts {
		for state, sum := range states {
			rows = append(rows, countRow{Topic: topic, State: state.String(), Count: sum.Count, Bound: sum.Bound})
		}
	}
	slices.SortFunc(rows, func(x, y countRow) int {
		if x.Topic != y.Topic {
			return cmp.Compare(x.Topic, y.Topic)
		}
		sx, _ := taskapi.ParseState(x.State)
		sy, _ := taskapi.ParseState(y.State)
		return int(sx - sy)
	})
	return rows
}

func (a *app) resultsCommand() *cobra.Command {
	var since, until string
	c := &cobra.Command{
		Use:   "results",
		Short: "Count the tasks completed within a time window, per topic and result",
		Example: `  taskctl results                      # the last hour
  taskctl results --since 24h
  taskctl results --since "2026-11-24 08:00" --until "2026-11-24 12:00" --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			from, err := parseWhen("--since", since, now)
			if err != nil {
				return err
			}
			to, err := parseWhen("--until", until, now)
			if err != nil {
				return err
			}
			if from.After(to) {
				return usagef("--since is after --until")
			}
			return a.results(cmd, from, to)
		},
	}
	c.Flags().StringVar(&since, "since", "1h", "the window's start: a time, or a duration meaning that long ago")
	c.Flags().StringVar(&until, "until", "now", "the window's end: a time, or a duration meaning that long ago")
	return c
}

// resultRow is one line of results' output.
type resultRow struct {
	Topic     string  `json:"topic"`
	Result    string  `json:"result"`
	Count     int64   `json:"count"`
	PerSecond float64 `json:"per_second"`
}

func (a *app) results(cmd *cobra.Command, from, to time.Time) error {
	s, err := a.openReads(cmd.Context())
	if err != nil {
		return err
	}
	results, err := s.Results(cmd.Context(), from, to)
	if err != nil {
		return err
	}
	seconds := max(to.Sub(from).Seconds(), 1e-3)
	rows := []resultRow{}
	for topic, byResult := range results {
		for result, n := range byResult {
			rows = append(rows, resultRow{Topic: topic, Result: result.String(), Count: n, PerSecond: float64(n) / seconds})
		}
	}
	slices.SortFunc(rows, func(x, y resultRow) int {
		if c := cmp.Compare(x.Topic, y.Topic); c != 0 {
			return c
		}
		return cmp.Compare(x.Result, y.Result)
	})
	if a.json {
		return a.printJSON(map[string]any{"from": from.UTC(), "to": to.UTC(), "results": rows})
	}
	a.printf("completed from %s to %s\n", from.UTC().Format(time.DateTime), to.UTC().Format(time.DateTime+" UTC"))
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = []string{r.Topic, r.Result, strconv.FormatInt(r.Count, 10), strconv.FormatFloat(r.PerSecond, 'f', 2, 64)}
	}
	if len(rows) == 0 {
		a.printf("no task completed\n")
		return nil
	}
	a.printTable([]string{"TOPIC", "RESULT", "TASKS", "PER SECOND"}, cells)
	return nil
}

func (a *app) resolveCommand() *cobra.Command {
	var preceding bool
	c := &cobra.Command{
		Use:   "resolve TIMESTAMP",
		Short: "Find the sequence at a point in time",
		Long: `resolve finds the first task created at or after TIMESTAMP, over every
topic (--preceding: the last created at or before it), and prints its
sequence: a cursor for list, a bound for purge and revive. TIMESTAMP is a
time (RFC 3339, or "2026-11-24 10:00" in UTC) or a duration meaning that
long ago.`,
		Example: `  taskctl resolve 2026-11-24T10:00:00Z
  taskctl resolve 2h --preceding`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseWhen("TIMESTAMP", args[0], time.Now())
			if err != nil {
				return err
			}
			s, err := a.openReads(cmd.Context())
			if err != nil {
				return err
			}
			seq, err := s.Resolve(cmd.Context(), at, preceding)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(map[string]any{"at": at.UTC(), "preceding": preceding, "sequence": seq})
			}
			a.printf("%d\n", seq)
			return nil
		},
	}
	c.Flags().BoolVar(&preceding, "preceding", false, "the last task created at or before the time")
	return c
}
