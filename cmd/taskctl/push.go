package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/taskapi"
)

// pushFlags are push's flags.
type pushFlags struct {
	topic, file, format, insertion string
	input, reference, notBefore    string
	suspended                      bool
	batch                          int
}

func (a *app) pushCommand() *cobra.Command {
	var f pushFlags
	c := &cobra.Command{
		Use:   "push [IDENTIFIER...]",
		Short: "Push tasks: identifiers as arguments, or JSON lines or CSV from a file or stdin",
		Long: `push adds tasks to a topic. Give identifiers as arguments (each task gets
--input, --reference and --not-before), or read tasks from --file (- for
stdin), one per line:

  JSON lines: {"identifier": "order-1", "input": {"total": 12}, "reference": "customer-7", "not_before": "+10m"}
  CSV:        a header naming identifier, input, reference, not_before; then one row per task

input may be any JSON value (stored as its JSON text) or a string (stored
as it is). not_before is a time (2026-11-24T10:00:00Z) or a duration from
now (+10m). The whole input is read and checked first: a bad line stops
the push before anything is written. Then the tasks go in batches of
--batch, each batch in a transaction of its own, in the order given.`,
		Example: `  taskctl push -t orders order-1 order-2 --input '{"total": 12}'
  taskctl push -t prices --insertion replace item-7 --input 19.90
  taskctl push -t orders --file tasks.jsonl
  taskctl push -t orders --file tasks.csv --not-before +1h
  printf '{"identifier":"a"}\n{"identifier":"b"}\n' | taskctl push -t orders --file -`,
		RunE: func(cmd *cobra.Command, args []string) error { return a.push(cmd, f, args) },
	}
	topicFlag(c, &f.topic)
	fl := c.Flags()
	fl.StringVarP(&f.file, "file", "f", "", "read tasks from this file, - for stdin")
	fl.StringVar(&f.format, "format", "", "jsonl or csv (default: by the file's extension, else jsonl)")
	fl.StringVarP(&f.insertion, "insertion", "i", "append", "append, supersede (older READY tasks become REDUNDANT), replace (older READY to SUCCEEDED tasks do) or delete (older tasks are deleted)")
	fl.StringVar(&f.input, "input", "", "the input of tasks given as arguments")
	fl.StringVar(&f.reference, "reference", "", "the reference of tasks given as arguments")
	fl.StringVar(&f.notBefore, "not-before", "", "defer the tasks: a time, or a duration from now (+10m)")
	fl.BoolVar(&f.suspended, "suspended", false, "push the tasks SUSPENDED instead of READY")
	fl.IntVar(&f.batch, "batch", 500, "tasks per transaction (1 to 10000)")
	return c
}

func (a *app) push(cmd *cobra.Command, f pushFlags, ids []string) error {
	insertion, err := taskapi.ParseInsertion(f.insertion)
	if err != nil {
		return usagef("--insertion %q: %v", f.insertion, err)
	}
	if f.batch < 1 || f.batch > 10000 {
		return usagef("--batch %d: give 1 to 10000", f.batch)
	}
	creations, err := a.pushInput(f, ids)
	if err != nil {
		return err
	}
	s, err := a.openTopics(cmd.Context(), f.topic)
	if err != nil {
		return err
	}
	bar := a.progress(int64(len(creations)), "pushing")
	var pushed []taskapi.Task
	for start := 0; start < len(creations); start += f.batch {
		batch := creations[start:min(start+f.batch, len(creations))]
		tasks, err := s.Push(cmd.Context(), f.topic, insertion, batch)
		if err != nil {
			bar.done()
			return fmt.Errorf("after %d of %d tasks were pushed: %w", start, len(creations), err)
		}
		pushed = append(pushed, tasks...)
		bar.add(len(batch))
	}
	bar.done()
	return a.reportPush(f.topic, len(creations), pushed)
}

// pushInput reads the tasks to push from the arguments or the file, and
// applies the flags that set every task's fields.
func (a *app) pushInput(f pushFlags, ids []string) ([]taskapi.Creation, error) {
	now := time.Now()
	switch {
	case f.file != "" && len(ids) > 0:
		return nil, usagef("give identifiers as arguments or --file, not both")
	case f.file == "" && len(ids) == 0:
		return nil, usagef("nothing to push: give identifiers as arguments, or --file (- for stdin)")
	case f.file != "" && (f.input != "" || f.reference != ""):
		return nil, usagef("--input and --reference go with identifiers as arguments; a file gives its own")
	}
	var creations []taskapi.Creation
	var err error
	if f.file != "" {
		creations, err = a.readPushFile(f, now)
	} else {
		for _, id := range ids {
			c, cerr := creation(id, f.input, f.reference, "", now)
			if cerr != nil {
				return nil, usagef("%v", cerr)
			}
			creations = append(creations, c)
		}
	}
	if err != nil {
		return nil, err
	}
	return applyPushFlags(creations, f, now)
}

// applyPushFlags sets --not-before and --suspended on every task.
func applyPushFlags(creations []taskapi.Creation, f pushFlags, now time.Time) ([]taskapi.Creation, error) {
	var notBefore time.Time
	if f.notBefore != "" {
		t, err := parseNotBefore(f.notBefore, now)
		if err != nil {
			return nil, usagef("--%v", err)
		}
		notBefore = t
	}
	for i := range creations {
		if !notBefore.IsZero() {
			creations[i].NotBefore = notBefore
		}
		creations[i].Suspended = f.suspended
	}
	return creations, nil
}

// readPushFile reads --file, showing progress on a terminal for a file.
func (a *app) readPushFile(f pushFlags, now time.Time) ([]taskapi.Creation, error) {
	format := strings.ToLower(f.format)
	if format == "" {
		format = "jsonl"
		if strings.EqualFold(filepath.Ext(f.file), ".csv") {
			format = "csv"
		}
	}
	r := a.stdin
	var size int64
	if f.file != "-" {
		file, err := os.Open(f.file)
		if err != nil {
			return nil, usagef("--file: %v", err)
		}
		defer func() { _ = file.Close() }() // only read: Close says nothing that a read did not
		if st, err := file.Stat(); err == nil {
			size = st.Size()
		}
		r = file
	}
	bar := a.progress(size, "reading")
	defer bar.done()
	return readCreations(r, format, now, bar.add)
}

// pushReport is push's output for scripts.
type pushReport struct {
	Topic  string `json:"topic"`
	Given  int    `json:"given"`
	Pushed int    `json:"pushed"`
	First  int64  `json:"first,omitempty"`
	Last   int64  `json:"last,omitempty"`
}

func (a *app) reportPush(topic string, given int, pushed []taskapi.Task) error {
	r := pushReport{Topic: topic, Given: given, Pushed: len(pushed)}
	if len(pushed) > 0 {
		r.First, r.Last = pushed[0].Sequence, pushed[len(pushed)-1].Sequence
	}
	if a.json {
		return a.printJSON(r)
	}
	a.printf("pushed %d of %d tasks to %s", r.Pushed, given, topic)
	if r.Pushed > 0 {
		a.printf(" (sequences %d to %d)", r.First, r.Last)
	}
	a.printf("\n")
	return nil
}
