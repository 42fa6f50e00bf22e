package main

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// listFlags are the filters and the cursor of list.
type listFlags struct {
	topic, identifier, reference string
	states                       []string
	after, before                int64
	since, until                 string
	limit                        int
	backward                     bool
}

func (a *app) listCommand() *cobra.Command {
	var f listFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List a page of a topic's tasks, with filters",
		Long: `list shows one page of a topic's tasks in sequence order, oldest first
(--backward: newest first). Page on with the cursor the output names:
--after SEQUENCE going forward, --before SEQUENCE going backward. --since
starts from the first task created at or after a time; --until stops at
the last created at or before one. No query counts the whole table.`,
		Example: `  taskctl list -t orders
  taskctl list -t orders --state failed,expired --limit 20
  taskctl list -t orders --after 1200           # the next page
  taskctl list -t orders --backward             # the newest tasks
  taskctl list -t orders --since 2h --until 1h  # created between two and one hours ago
  taskctl list -t orders --identifier order-42 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.list(cmd, f) },
	}
	topicFlag(c, &f.topic)
	c.Flags().StringSliceVarP(&f.states, "state", "s", nil, "only tasks in these states (READY, FAILED, …; comma-separated)")
	c.Flags().StringVar(&f.identifier, "identifier", "", "only tasks with this identifier")
	c.Flags().StringVar(&f.reference, "reference", "", "only tasks with this reference")
	c.Flags().Int64Var(&f.after, "after", 0, "start after this sequence (forward)")
	c.Flags().Int64Var(&f.before, "before", 0, "start before this sequence (backward)")
	c.Flags().StringVar(&f.since, "since", "", "start at the first task created at or after this time or this long ago")
	c.Flags().StringVar(&f.until, "until", "", "stop at the last task created at or before this time or this long ago")
	c.Flags().IntVarP(&f.limit, "limit", "n", 50, "tasks per page (1 to 10000)")
	c.Flags().BoolVar(&f.backward, "backward", false, "newest first")
	return c
}

// pageRequest is a parsed list command line.
type pageRequest struct {
	listing   taskapi.Listing
	cursor    int64
	since     time.Time // zero: start at the cursor
	until     time.Time // zero: no end
	direction taskapi.Direction
	size      int
}

// request checks the flags and turns them into a page request.
func (f listFlags) request(now time.Time) (pageRequest, error) {
	r := pageRequest{size: f.limit, direction: taskapi.Forward, cursor: taskapi.Inception}
	if f.limit < 1 || f.limit > 10000 {
		return r, usagef("--limit %d: give 1 to 10000", f.limit)
	}
	states, err := parseStates(f.states)
	if err != nil {
		return r, err
	}
	r.listing = taskapi.Listing{States: states, Identifier: f.identifier, Reference: f.reference}
	if f.after < 0 || f.before < 0 {
		return r, usagef("--after and --before are sequences: positive whole numbers")
	}
	if f.backward || f.before > 0 {
		r.direction, r.cursor = taskapi.Backward, taskapi.MaxSequence
	}
	switch {
	case f.after > 0 && (f.before > 0 || f.backward):
		return r, usagef("--after pages forward: it goes with neither --before nor --backward")
	case f.after > 0:
		r.cursor = f.after
	case f.before > 0:
		r.cursor = f.before
	}
	if f.since != "" {
		if r.since, err = parseWhen("--since", f.since, now); err != nil {
			return r, err
		}
	}
	if f.until != "" {
		if r.until, err = parseWhen("--until", f.until, now); err != nil {
			return r, err
		}
	}
	if !r.since.IsZero() && !r.until.IsZero() && r.since.After(r.until) {
		return r, usagef("--since is after --until")
	}
	if (f.after > 0 || f.before > 0) && (!r.since.IsZero() && r.direction == taskapi.Forward || !r.until.IsZero() && r.direction == taskapi.Backward) {
		return r, usagef("a sequence cursor and a time to start from contradict each other: give one")
	}
	return r, nil
}

func (a *app) list(cmd *cobra.Command, f listFlags) error {
	req, err := f.request(time.Now())
	if err != nil {
		return err
	}
	s, err := a.openReadTopics(cmd.Context(), f.topic)
	if err != nil {
		return err
	}
	infos, err := readPage(cmd, s, f.topic, req)
	if err != nil {
		return err
	}
	return a.printPage(f.topic, infos, req)
}

// readPage reads the page: from a time when the start is a time, else from
// the cursor; tasks beyond the other end's time are left out.
func readPage(cmd *cobra.Command, s store, topic string, req pageRequest) ([]taskapi.Info, error) {
	ctx := cmd.Context()
	start := req.since
	if req.direction == taskapi.Backward {
		start = req.until
	}
	var infos []taskapi.Info
	var err error
	if !start.IsZero() {
		infos, err = s.PageAt(ctx, topic, req.listing, start, req.size, req.direction)
	} else {
		infos, err = s.Page(ctx, topic, req.listing, req.cursor, req.size, req.direction)
	}
	if err != nil {
		return nil, err
	}
	for i, info := range infos {
		if !req.until.IsZero() && info.Created.After(req.until) || !req.since.IsZero() && info.Created.Before(req.since) {
			return infos[:i], nil
		}
	}
	return infos, nil
}

func (a *app) printPage(topic string, infos []taskapi.Info, req pageRequest) error {
	if a.json {
		out := make([]taskJSON, len(infos))
		for i, info := range infos {
			out[i] = toJSON(topic, info)
		}
		return a.printJSON(out)
	}
	if len(infos) == 0 {
		a.printf("no tasks\n")
		return nil
	}
	now := time.Now()
	rows := make([][]string, len(infos))
	for i, info := range infos {
		rows[i] = []string{
			strconv.FormatInt(info.Sequence, 10), output.Clip(info.Identifier, 32), info.State.String(),
			output.Clip(info.Reference, 20), output.Clip(info.Owner, 24), ago(info.Created, now), ago(info.Completed, now), output.Clip(info.Output, 30),
		}
	}
	a.printTable([]string{"SEQUENCE", "IDENTIFIER", "STATE", "REFERENCE", "OWNER", "CREATED", "COMPLETED", "OUTPUT"}, rows)
	if len(infos) == req.size {
		last := infos[len(infos)-1].Sequence
		cursor := "--after"
		if req.direction == taskapi.Backward {
			cursor = "--before"
		}
		a.printf("next page: the same command with %s %d\n", cursor, last)
	}
	return nil
}
