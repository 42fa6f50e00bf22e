package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskapi"
)

// The flags of cancel.
const (
	identifierFlag = "identifier"
	prefixFlag     = "prefix"
	reasonFlag     = "reason"
)

// cancelChunk is how many tasks found by a prefix one transaction
// cancels; findPage how many one read of them finds.
const (
	cancelChunk = 1000
	findPage    = 500
)

// cancelSequencesArg names cancel's sequences in the audit log.
const cancelSequencesArg = "sequence"

// cancelCommand is 'cancel TOPIC SEQUENCE... [--reason TEXT]',
// 'cancel TOPIC --identifier ID [--reason TEXT]' and 'cancel TOPIC
// --prefix TEXT [--reason TEXT]' (taskapi.Canceller).
func (a *app) cancelCommand() *cobra.Command {
	var identifier, prefix, reason string
	c := &cobra.Command{
		Use:   "cancel TOPIC (SEQUENCE... | --identifier ID | --prefix TEXT) [--reason TEXT]",
		Short: "Cancel tasks for good: READY, ACTIVE or SUSPENDED ones by sequence, or every READY task of an identifier or a prefix of identifiers",
		Long: `cancel ends tasks of a topic before they run, or while they run; a cancelled
task is CANCELLED for good: never polled, retried or revived again, its
output says "cancelled" (and ": " and the --reason given), and its
completion time is the cancellation's.

With sequences it cancels those of the tasks that are READY (deferred ones
included), ACTIVE or SUSPENDED; an ACTIVE task's owner is refused its
result from then on, and taskproc cancels its handler's context; a
SUSPENDED task is no longer released by a junction, revived or reassigned. With --identifier it cancels
every READY task of that identifier, and its ACTIVE tasks run on (cancel
them by sequence). With --prefix it does the same for every identifier
that starts with the text, byte for byte (a tenant whose tasks carry
identifiers of their own, tenant-42/...): the READY tasks it finds, a
thousand to a transaction; a task pushed after it looked is left, and so
is one polled meanwhile. It names the ACTIVE tasks of the prefix, which
run on. A task in another state, or not in the topic, is left as it is:
cancelling nothing is not an error. It prints the tasks it cancelled,
whether each was running and by which owner.`,
		Example: `  taskctl cancel orders 1234 1240 --reason "customer left"
  taskctl cancel orders --identifier tenant-42
  taskctl cancel orders --prefix tenant-42/ --reason "tenant left"
  taskctl cancel orders 1234 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.cancel(cmd, args[0], args[1:], cancelTarget{identifier: identifier, prefix: prefix, reason: reason})
		},
	}
	c.Flags().StringVar(&identifier, identifierFlag, "", "cancel every READY task of this identifier, instead of tasks by sequence")
	c.Flags().StringVar(&prefix, prefixFlag, "", "cancel every READY task whose identifier starts with this text, instead of tasks by sequence")
	c.Flags().StringVar(&reason, reasonFlag, "", "why: it goes into the output of the tasks (\"cancelled: TEXT\")")
	return c
}

// cancelledJSON is one task that cancel cancelled, as --json prints it.
type cancelledJSON struct {
	Sequence   int64   `json:"sequence"`
	Identifier string  `json:"identifier"`
	Was        string  `json:"was"`     // READY, ACTIVE or SUSPENDED
	Running    bool    `json:"running"` // it was ACTIVE: an owner ran it
	Owner      *string `json:"owner"`   // the owner that ran it; null when it was READY
}

// cancelReport is cancel's output for scripts.
type cancelReport struct {
	Topic     string          `json:"topic"`
	Tasks     int             `json:"tasks"` // how many were cancelled
	Cancelled []cancelledJSON `json:"cancelled"`
	// Left are the sequences given that were not cancelled: not READY,
	// ACTIVE or SUSPENDED, or not in the topic.
	Left []int64 `json:"left,omitempty"`
	// Running are the ACTIVE tasks of a prefix, which run on.
	Running []int64 `json:"running,omitempty"`
}

// cancelTarget is what cancel was asked to cancel besides sequences: the
// READY tasks of an identifier or of a prefix, with a reason.
type cancelTarget struct{ identifier, prefix, reason string }

// cancel cancels the tasks of topic given as seqs, or the READY tasks of
// an identifier or of a prefix, exactly one of the three, and records it
// in the audit log.
func (a *app) cancel(cmd *cobra.Command, topic string, given []string, what cancelTarget) error {
	byIdentifier, byPrefix := cmd.Flags().Changed(identifierFlag), cmd.Flags().Changed(prefixFlag)
	switch {
	case byIdentifier && byPrefix, (byIdentifier || byPrefix) && len(given) > 0:
		return usagef("give sequences, --identifier or --prefix: one of them")
	case byIdentifier && what.identifier == "":
		return usagef("--identifier is empty: give the identifier whose READY tasks to cancel")
	case byPrefix && what.prefix == "":
		return usagef("--prefix is empty: it would name every task; give the start of the identifiers whose READY tasks to cancel")
	case !byIdentifier && !byPrefix && len(given) == 0:
		return usagef("say which tasks: give their sequences after the topic, --identifier ID or --prefix TEXT")
	}
	seqs, err := parseSequences(given)
	if err != nil {
		return err
	}
	if len(given) > 0 && len(seqs) == 0 {
		return usagef("say which tasks: give their sequences after the topic, --identifier ID or --prefix TEXT")
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	if err := ops.CheckReason("--reason", what.reason); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, topic)
	if err != nil {
		return err
	}
	var (
		done    []taskapi.Cancellation
		running []int64
	)
	c := change{cmd: cmd, topics: []string{topic}}
	switch {
	case byIdentifier:
		done, err = s.CancelIdentifier(ctx, topic, what.identifier, what.reason)
		c.bound = fmt.Sprintf("the READY tasks of identifier %q", what.identifier)
	case byPrefix:
		var found int
		done, running, found, err = cancelPrefix(ctx, s, topic, what.prefix, what.reason)
		c.bound = fmt.Sprintf("the %d READY tasks of identifiers starting with %q that it found", found, what.prefix)
	default:
		done, err = s.Cancel(ctx, topic, what.reason, seqs)
		c.args, c.bound = map[string]any{cancelSequencesArg: seqs}, selectionBound(seqs, taskapi.Unbounded)
	}
	c.changed = int64(len(done))
	c.outcome = fmt.Sprintf("cancelled %d tasks of %q", len(done), topic)
	a.audited(s, c, err)
	if err != nil {
		return err
	}
	return a.reportCancelled(topic, seqs, done, running)
}

// cancelPrefix cancels the READY tasks of topic whose identifiers start
// with prefix, as it finds them: each only while it is still READY,
// cancelChunk to a transaction. It returns those it cancelled, the ACTIVE
// tasks of the prefix (which run on) and how many READY tasks it found;
// after an error, what it cancelled before.
func cancelPrefix(ctx context.Context, s store, topic, prefix, reason string) (done []taskapi.Cancellation, running []int64, found int, err error) {
	var ready []int64
	search := taskapi.Search{Identifier: prefix}
	for cursor := taskapi.MaxSequence; ; {
		infos, err := s.Find(ctx, topic, search, cursor, findPage)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, info := range infos {
			switch cursor = info.Sequence; info.State {
			case taskapi.Ready:
				ready = append(ready, info.Sequence)
			case taskapi.Active:
				running = append(running, info.Sequence)
			}
		}
		if len(infos) < findPage {
			break
		}
	}
	slices.Sort(ready)
	slices.Sort(running)
	for chunk := range slices.Chunk(ready, cancelChunk) {
		confirmed := make(map[int64]taskapi.State, len(chunk))
		for _, seq := range chunk {
			confirmed[seq] = taskapi.Ready
		}
		cancelled, err := s.CancelIn(ctx, topic, reason, confirmed)
		if done = append(done, cancelled...); err != nil {
			return done, running, len(ready), err
		}
	}
	return done, running, len(ready), nil
}

// reportCancelled prints the tasks cancelled, and how many; seqs are the
// sequences given, if any, running the ACTIVE tasks of a prefix.
func (a *app) reportCancelled(topic string, seqs []int64, cancelled []taskapi.Cancellation, running []int64) error {
	slices.SortFunc(cancelled, func(x, y taskapi.Cancellation) int { return cmp.Compare(x.Task.Sequence, y.Task.Sequence) })
	r := cancelReport{Topic: topic, Tasks: len(cancelled), Cancelled: make([]cancelledJSON, len(cancelled)), Running: running}
	done := map[int64]bool{}
	for i, c := range cancelled {
		r.Cancelled[i] = cancelledJSON{Sequence: c.Task.Sequence, Identifier: c.Task.Identifier,
			Was: c.From.String(), Running: c.Owner != ""}
		if c.Owner != "" {
			r.Cancelled[i].Owner = &c.Owner
		}
		done[c.Task.Sequence] = true
	}
	for _, seq := range seqs {
		if !done[seq] {
			r.Left = append(r.Left, seq)
		}
	}
	if a.json {
		return a.printJSON(r)
	}
	if len(cancelled) > 0 {
		cells := make([][]string, len(r.Cancelled))
		for i, c := range r.Cancelled {
			owner := "-"
			if c.Owner != nil {
				owner = output.Clip(*c.Owner, 40)
			}
			cells[i] = []string{strconv.FormatInt(c.Sequence, 10), output.Clip(c.Identifier, 40), c.Was, owner}
		}
		a.printTable([]string{"SEQUENCE", "IDENTIFIER", "WAS", "OWNER"}, cells)
	}
	switch n := len(cancelled); n {
	case 0:
		a.printf("no task cancelled in %s\n", topic)
	case 1:
		a.printf("cancelled 1 task of %s\n", topic)
	default:
		a.printf("cancelled %d tasks of %s\n", n, topic)
	}
	if len(r.Left) > 0 {
		a.printf("left as they are (not READY, ACTIVE or SUSPENDED, or not in %s): %s\n", topic, joinSequences(r.Left))
	}
	if len(running) > 0 {
		a.printf("ACTIVE tasks of the prefix run on (cancel them by sequence): %s\n", joinSequences(running))
	}
	return nil
}

// joinSequences writes sequences for a line of text: "12, 15, 40".
func joinSequences(seqs []int64) string {
	out := ""
	for i, seq := range seqs {
		if i > 0 {
			out += ", "
		}
		out += strconv.FormatInt(seq, 10)
	}
	return out
}
