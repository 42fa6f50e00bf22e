package web

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// choosesTasks reports whether f names tasks by sequence.
func choosesTasks(f form) bool { return len(url.Values(f)["seq"]) > 0 }

// planPurgeChosen deletes tasks named by sequence (seq, repeated: a group
// of the failures page, what a search found), each only while it is in
// one of the states in (repeated; default: the states it is in at the
// confirmation, each of FAILED to CANCELLED). The confirmation sends back
// the sequences and the states, so the purge deletes none but these tasks,
// and none that changed state meanwhile (a task revived since stays).
func (s *Server) planPurgeChosen(ctx context.Context, f form, preview bool) (*plan, error) {
	sel, err := selectTasks(ctx, s.cfg.Store, f, nil)
	if err != nil {
		return nil, err
	}
	sel.keepError()
	in, err := confirmedStates(f, sel)
	if err != nil {
		return nil, err
	}
	for _, st := range in {
		if !slices.Contains(ops.PurgedStates, st) {
			return nil, badRequest("state %s: only FAILED to CANCELLED can be purged", st)
		}
	}
	if preview {
		if err := sel.mustBe(func(st taskapi.State) bool { return slices.Contains(in, st) }, "only tasks in "+stateList(in)+" are purged here"); err != nil {
			return nil, err
		}
	}
	hidden := sel.values()
	hidden["in"] = stateNames(in)
	p := &plan{Title: "Purge tasks", Hidden: hidden, Tasks: sel.rows(), Back: topicLink(sel.topic)}
	p.Lines = []string{sel.describe() + ":", fmt.Sprintf("%s would be deleted for good, each only while it is %s.", tasksWord(int64(len(sel.infos))), stateList(in))}
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.purgeChosen(ctx, sel, in)
	}
	return p, nil
}

// purgeChosen deletes the tasks of sel that are in states, a transaction
// per run of consecutive sequences, and says how many went.
func (s *Server) purgeChosen(ctx context.Context, sel selection, states []taskapi.State) (*outcome, error) {
	var purged int64
	var err error
	for _, span := range consecutive(sel.infos) {
		var n int64
		n, err = s.cfg.Store.PurgeCompletedBy(ctx, sel.topic, span, time.Time{}, states) // the sequences and states are the bound
		if purged += n; err != nil {
			break
		}
	}
	if err != nil && purged == 0 {
		return nil, err
	}
	o := &outcome{Title: "Purged", Back: topicLink(sel.topic), Changed: purged,
		Lines: []string{fmt.Sprintf("deleted %s of the %s of %q named by sequence.", tasksWord(purged), tasksWord(int64(len(sel.infos))), sel.topic)}}
	if left := int64(len(sel.infos)) - purged; left > 0 && err == nil {
		o.Lines = append(o.Lines, fmt.Sprintf("%s left alone: no longer in %s, or gone.", tasksWord(left), stateList(states)))
	}
	o.Lines = append(o.Lines, sel.skippedLines()...)
	if err != nil {
		o.Lines = append(o.Lines, fmt.Sprintf("then it stopped: %v", err))
	}
	return o, nil
}

// consecutive returns the runs of consecutive sequences of infos, which
// are sorted: a range that holds these tasks of the topic and no other
// sequence at all.
func consecutive(infos []taskapi.Info) []taskapi.Range {
	var runs []taskapi.Range
	for _, info := range infos {
		if n := len(runs); n > 0 && runs[n-1].To+1 == info.Sequence {
			runs[n-1].To = info.Sequence
			continue
		}
		runs = append(runs, taskapi.Range{From: info.Sequence, To: info.Sequence})
	}
	return runs
}
