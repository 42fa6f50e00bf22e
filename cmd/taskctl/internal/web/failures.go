package web

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// The failures page reads every FAILED and SUSPENDED task within its
// budget: a state of a topic is read in chunks of failureChunk tasks at
// most (of minFailureChunk at least, as many as were counted in it
// otherwise), and of what it reads it keeps the newest maxFailuresKept to
// list the newest of them by the time they finished.
const (
	failureChunk    = 1000
	minFailureChunk = 10
	maxFailuresKept = 1000
)

// maxErrorText bounds the error text a failure is grouped and shown by.
const maxErrorText = 300

// failedStates are the states the failures page lists.
var failedStates = []taskapi.State{taskapi.Failed, taskapi.Suspended}

// failure is one failed task with its last error.
type failure struct {
	Topic    string
	Info     taskapi.Info
	Error    string    // the last error: of the attempt log, or the output
	Finished time.Time // when it completed; created, when pushed SUSPENDED
}

// readFailures reads the tasks in states across topics (one topic when
// only is given), newest first by sequence, and groups them by their last
// error as it reads (g). A count of the states per topic first says which
// topics hold any, and the highest sequence of each (on PostgreSQL the
// index of the rare states serves it, a few dozen topics a statement).
// Then each state of each such topic is read backwards by sequence, in
// chunks, when the merge reaches it (one state at a time, so that the
// index yields it in order), and they are merged by sequence, which all
// topics share. The reads are one transaction.
//
// No read begins after until: what it has grouped then is still the
// newest failures, fewer of them, and cut says so. A read under way is
// not stopped (the page's own deadline bounds it), so that the
// transaction ends as it began.
func readFailures(ctx context.Context, store Store, counts map[string]map[taskapi.State]taskapi.Summary, states []taskapi.State, until time.Time, g *grouper) (cut bool, err error) {
	heads := failureHeads(counts, states)
	err = store.Pages(ctx, func(p ops.Pager) error {
		for {
			i := newestHead(heads)
			if i < 0 {
				return nil
			}
			h := &heads[i]
			if !h.read {
				if cut = !time.Now().Before(until); cut {
					return nil
				}
				if err := h.fill(ctx, p); err != nil {
					return err
				}
				continue
			}
			g.add(newFailure(h.topic, h.infos[0]))
			if h.infos = h.infos[1:]; len(h.infos) == 0 && !h.done {
				h.read = false
			}
		}
	})
	return cut, err
}

// failureHeads returns a head for each state of each topic that counts
// tasks in it, none of them read yet, each to read chunks of as many
// tasks as were counted and one more (so that one read of an exact count
// finds the end), within minFailureChunk and failureChunk.
func failureHeads(counts map[string]map[taskapi.State]taskapi.Summary, states []taskapi.State) []failureHead {
	var heads []failureHead
	for topic, byState := range counts {
		for _, state := range states {
			if sum := byState[state]; sum.Count > 0 {
				chunk := int(max(minFailureChunk, min(failureChunk, sum.Count+1)))
				heads = append(heads, failureHead{topic: topic, state: state, cursor: taskapi.MaxSequence, next: sum.Bound, chunk: chunk})
			}
		}
	}
	return heads
}

// failureHead is what is read, and not yet merged, of one state of one
// topic.
type failureHead struct {
	topic  string
	state  taskapi.State
	cursor int64 // the next read takes the tasks below it
	chunk  int
	next   int64 // the highest sequence to merge: of infos when read, else the count's bound
	read   bool  // infos holds the next chunk
	infos  []taskapi.Info
	done   bool // the topic has no older tasks in the state
}

// fill reads the next chunk.
func (h *failureHead) fill(ctx context.Context, p ops.Pager) error {
	infos, err := p.Page(ctx, h.topic, taskapi.Listing{States: []taskapi.State{h.state}}, h.cursor, h.chunk, taskapi.Backward)
	if err != nil {
		return err
	}
	h.infos, h.done, h.read = infos, len(infos) < h.chunk, true
	if len(infos) > 0 {
		h.cursor = infos[len(infos)-1].Sequence
	}
	return nil
}

// key is the sequence by which h is merged, and false when h is empty.
func (h *failureHead) key() (int64, bool) {
	switch {
	case !h.read:
		return h.next, true
	case len(h.infos) > 0:
		return h.infos[0].Sequence, true
	}
	return 0, false
}

// newestHead returns the index of the head with the highest sequence, -1
// when every head is empty.
func newestHead(heads []failureHead) int {
	best, bestKey := -1, int64(0)
	for i := range heads {
		if k, ok := heads[i].key(); ok && (best < 0 || k > bestKey) {
			best, bestKey = i, k
		}
	}
	return best
}

// newFailure reads the last error of a task.
func newFailure(topic string, info taskapi.Info) failure {
	f := failure{Topic: topic, Info: info, Error: lastError(info.Output), Finished: info.Completed}
	if f.Finished.IsZero() {
		f.Finished = info.Created
	}
	return f
}

// lastError is the last error a task's output records: the error of the
// last attempt in taskproc's attempt log, else the output itself, on one
// line and cut to maxErrorText bytes.
func lastError(output string) string {
	if attempts, ok := taskproc.Attempts(output); ok && len(attempts) > 0 {
		output = attempts[len(attempts)-1].Error
	}
	text := strings.Join(strings.Fields(output), " ")
	if text == "" {
		return "(no output)"
	}
	return cut(text, maxErrorText)
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// failureGroup is the failures of one error text.
type failureGroup struct {
	Error          string
	Count          int64
	Newest, Oldest time.Time
	Topics         []groupTopic           // by topic name
	byTopic        map[string]*groupTopic // while it is grouped
}

// groupTopic is the part of a group in one topic: its tasks by sequence,
// for the group's actions.
type groupTopic struct {
	Topic     string
	Seqs      []int64
	States    []taskapi.State // the states among them
	Suspended []int64         // of Seqs, the SUSPENDED ones
}

// grouper groups failures by error text as they are read, those that
// match when match is given, and keeps the first maxFailuresKept of them.
type grouper struct {
	match   func(taskapi.Info) bool
	groups  []*failureGroup
	byError map[string]*failureGroup
	read    int64 // failures read
	matched int64 // of them, those grouped
	kept    []failure
}

// add counts f in its group, when it matches.
func (gr *grouper) add(f failure) {
	if gr.byError == nil {
		gr.byError = map[string]*failureGroup{}
	}
	if gr.read++; gr.match != nil && !gr.match(f.Info) {
		return
	}
	gr.matched++
	if len(gr.kept) < maxFailuresKept {
		gr.kept = append(gr.kept, f)
	}
	g := gr.byError[f.Error]
	if g == nil {
		g = &failureGroup{Error: f.Error, Newest: f.Finished, Oldest: f.Finished}
		g.byTopic = map[string]*groupTopic{}
		gr.byError[f.Error] = g
		gr.groups = append(gr.groups, g)
	}
	g.Count++
	g.Newest, g.Oldest = later(g.Newest, f.Finished), earliest(g.Oldest, f.Finished)
	gt := g.byTopic[f.Topic]
	if gt == nil {
		gt = &groupTopic{Topic: f.Topic}
		g.byTopic[f.Topic] = gt
	}
	gt.Seqs = append(gt.Seqs, f.Info.Sequence)
	if f.Info.State == taskapi.Suspended {
		gt.Suspended = append(gt.Suspended, f.Info.Sequence)
	}
	if !slices.Contains(gt.States, f.Info.State) {
		gt.States = append(gt.States, f.Info.State)
	}
}

// result returns the groups, the largest first (then the most recent),
// each with its topics by name and their tasks by sequence.
func (gr *grouper) result() []failureGroup {
	out := make([]failureGroup, len(gr.groups))
	for i, g := range gr.groups {
		for _, gt := range g.byTopic {
			slices.Sort(gt.Seqs)
			slices.Sort(gt.Suspended)
			slices.Sort(gt.States)
			g.Topics = append(g.Topics, *gt)
		}
		slices.SortFunc(g.Topics, func(a, b groupTopic) int { return strings.Compare(a.Topic, b.Topic) })
		out[i] = *g
	}
	slices.SortStableFunc(out, func(a, b failureGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.Newest.Compare(a.Newest))
	})
	return out
}

// groupFailures groups failures by error text, the largest group first
// (then the most recent).
func groupFailures(failures []failure) []failureGroup {
	var gr grouper
	for _, f := range failures {
		gr.add(f)
	}
	return gr.result()
}

// byFinished sorts failures newest first by the time they finished, then
// by sequence.
func byFinished(failures []failure) {
	slices.SortStableFunc(failures, func(a, b failure) int {
		return cmp.Or(b.Finished.Compare(a.Finished), cmp.Compare(b.Info.Sequence, a.Info.Sequence))
	})
}
