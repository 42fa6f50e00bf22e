package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/output"
	"github.com/taskrepo/taskrepo/taskproc"
)

func (a *app) showCommand() *cobra.Command {
	var topic string
	c := &cobra.Command{
		Use:   "show SEQUENCE",
		Short: "Show everything stored about one task",
		Long: `show prints every field of one task: its state, the state it came from,
owner, reference, times, revivals, input and output (JSON shown indented),
and the attempts of a task that taskproc retried. Sequences are unique
across topics: without --topic, show looks in every topic.`,
		Example: `  taskctl show 1234
  taskctl show -t orders 1234 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seqs, err := parseSequences(args)
			if err != nil {
				return err
			}
			return a.show(cmd, topic, seqs[0])
		},
	}
	c.Flags().StringVarP(&topic, "topic", "t", "", "the task's topic (default: look in every topic)")
	return c
}

func (a *app) show(cmd *cobra.Command, topic string, seq int64) error {
	ctx := cmd.Context()
	topics := []string{topic}
	if topic == "" {
		topics = nil
	}
	s, err := a.openReadTopics(ctx, topics...)
	if err != nil {
		return err
	}
	if topic == "" {
		if topics, err = s.Topics(ctx); err != nil {
			return err
		}
	}
	for _, t := range topics {
		info, found, err := s.Lookup(ctx, t, seq)
		if err != nil {
			return err
		}
		if found {
			if a.json {
				return a.printJSON(toJSON(t, info))
			}
			a.printTask(toJSON(t, info))
			return nil
		}
	}
	if topic != "" {
		return notFoundf("topic %q has no task %d", topic, seq)
	}
	return notFoundf("no topic has a task %d", seq)
}

// printTask prints a task's fields one per line, then its input, output
// and attempts.
func (a *app) printTask(t taskJSON) {
	now := time.Now()
	rows := [][]string{
		{"topic", output.Clip(t.Topic, 1000)}, {"sequence", strconv.FormatInt(t.Sequence, 10)}, {"identifier", output.Clip(t.Identifier, 1000)},
		{"state", t.State}, {"descent", t.Descent}, {"owner", orDash(output.Clip(t.Owner, 1000))}, {"reference", orDash(output.Clip(t.Reference, 1000))},
		{"created", stamp(&t.Created, now)}, {"completed", stamp(t.Completed, now)},
		{"not before", stamp(t.NotBefore, now)}, {"revivals", strconv.Itoa(t.Revivals)},
	}
	fmt.Fprintln(a.stdout, output.RenderTable([]string{"FIELD", "VALUE"}, rows, output.Colorful(a.stdout)))
	a.printf("\ninput:\n%s\n\noutput:\n%s\n", indentJSON(t.Input), indentJSON(t.Output))
	if attempts, ok := taskproc.Attempts(t.Output); ok {
		a.printf("\nattempts:\n")
		for _, at := range attempts {
			a.printf("  %d  %s  %s\n", at.Number, at.At.UTC().Format(time.RFC3339), at.Error)
		}
	}
}

// stamp writes a time and how long ago it was.
func stamp(t *time.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000000") + " UTC (" + ago(*t, now) + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// indentJSON indents s when it is JSON, and shows it as it is otherwise.
func indentJSON(s string) string {
	if s == "" {
		return "  (none)"
	}
	var buf bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&buf, []byte(s), "  ", "  ") == nil {
		return "  " + buf.String()
	}
	return "  " + strings.ReplaceAll(printable(s), "\n", "\n  ")
}

// printable shows the control characters of s, other than new lines and
// tabs, as escapes, so that a task's text cannot steer the terminal.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r < ' ' && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
