package main

import (
	"cmp"
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
	reasonFlag     = "reason"
)

// cancelSequencesArg names cancel's sequences in the audit log.
const cancelSequencesArg = "sequence"

// cancelCommand is 'cancel TOPIC SEQUENCE... [--reason TEXT]' and
// 'cancel TOPIC --identifier ID [--reason TEXT]' (taskapi.Canceller).
func (a *app) cancelCommand() *cobra.Command {
	var identifier, reason string
	c := &cobra.Command{
		Use:   "cancel TOPIC (SEQUENCE... | --identifier ID) [--reason TEXT]",
		Short: "Cancel tasks for good: READY or ACTIVE ones by sequence, or every READY task of an identifier",
		Long: `cancel ends tasks of a topic before they run, or while they run; a cancelled
task is CANCELLED for good: never polled, retried or revived again, its
output says "cancelled" (and ": " and the --reason given), and its
completion time is the cancellation's.

With sequences it cancels those of the tasks that are READY (deferred ones
included) or ACTIVE; an ACTIVE task's owner is refused its result from
then on, and taskproc cancels its handler's context. With --identifier it cancels
every READY task of that identifier, and its ACTIVE tasks run on (cancel
them by sequence). A task in another state, or not in the topic, is left
as it is: cancelling nothing is not an error. It prints the tasks it
cancelled, whether each was running and by which owner.`,
		Example: `  taskctl cancel orders 1234 1240 --reason "customer left"
  taskctl cancel orders --identifier tenant-42
  taskctl cancel orders 1234 --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.cancel(cmd, args[0], args[1:], identifier, reason)
		},
	}
	c.Flags().StringVar(&identifier, identifierFlag, "", "cancel every READY task of this identifier, instead of tasks by sequence")
	c.Flags().StringVar(&reason, reasonFlag, "", "why: it goes into the output of the tasks (\"cancelled: TEXT\")")
	return c
}

// cancelledJSON is one task that cancel cancelled, as --json prints it.
type cancelledJSON struct {
	Sequence   int64   `json:"sequence"`
	Identifier string  `json:"identifier"`
	Was        string  `json:"was"`     // READY or ACTIVE
	Running    bool    `json:"running"` // it was ACTIVE: an owner ran it
	Owner      *string `json:"owner"`   // the owner that ran it; null when it was READY
}

// cancelReport is cancel's output for scripts.
type cancelReport struct {
	Topic     string          `json:"topic"`
	Tasks     int             `json:"tasks"` // how many were cancelled
	Cancelled []cancelledJSON `json:"cancelled"`
	// Left are the sequences given that were not cancelled: not READY or
	// ACTIVE, or not in the topic.
	Left []int64 `json:"left,omitempty"`
}

// cancel cancels the tasks of topic given as seqs, or the READY tasks of
// identifier, exactly one of the two, and records it in the audit log.
func (a *app) cancel(cmd *cobra.Command, topic string, given []string, identifier, reason string) error {
	byIdentifier := cmd.Flags().Changed(identifierFlag)
	switch {
	case byIdentifier && len(given) > 0:
		return usagef("give sequences or --identifier, not both")
	case byIdentifier && identifier == "":
		return usagef("--identifier is empty: give the identifier whose READY tasks to cancel")
	case !byIdentifier && len(given) == 0:
		return usagef("say which tasks: give their sequences after the topic, or --identifier ID")
	}
	seqs, err := parseSequences(given)
	if err != nil {
		return err
	}
	if !byIdentifier && len(seqs) == 0 {
		return usagef("say which tasks: give their sequences after the topic, or --identifier ID")
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	if err := ops.CheckReason("--reason", reason); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := a.openTopics(ctx, topic)
	if err != nil {
		return err
	}
	var cancelled []taskapi.Cancellation
	c := change{cmd: cmd, topics: []string{topic}}
	if byIdentifier {
		cancelled, err = s.CancelIdentifier(ctx, topic, identifier, reason)
		c.bound = fmt.Sprintf("the READY tasks of identifier %q", identifier)
	} else {
		cancelled, err = s.Cancel(ctx, topic, reason, seqs)
		c.args, c.bound = map[string]any{cancelSequencesArg: seqs}, selectionBound(seqs, taskapi.Unbounded)
	}
	c.changed = int64(len(cancelled))
	c.outcome = fmt.Sprintf("cancelled %d tasks of %q", len(cancelled), topic)
	a.audited(s, c, err)
	if err != nil {
		return err
	}
	return a.reportCancelled(topic, seqs, cancelled)
}

// reportCancelled prints the tasks cancelled, and how many; seqs are the
// sequences given, if any.
func (a *app) reportCancelled(topic string, seqs []int64, cancelled []taskapi.Cancellation) error {
	slices.SortFunc(cancelled, func(x, y taskapi.Cancellation) int { return cmp.Compare(x.Task.Sequence, y.Task.Sequence) })
	r := cancelReport{Topic: topic, Tasks: len(cancelled), Cancelled: make([]cancelledJSON, len(cancelled))}
	done := map[int64]bool{}
	for i, c := range cancelled {
		r.Cancelled[i] = cancelledJSON{Sequence: c.Task.Sequence, Identifier: c.Task.Identifier,
			Was: cancelledFrom(c).String(), Running: c.Owner != ""}
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
		a.printf("left as they are (not READY or ACTIVE, or not in %s): %s\n", topic, joinSequences(r.Left))
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
