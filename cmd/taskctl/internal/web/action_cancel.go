package web

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// identifierField names, in a cancellation, the identifier whose READY
// tasks a page showed; reasonField the reason that goes into the tasks'
// output.
const (
	identifierField = "identifier"
	reasonField     = "reason"
)

// planCancel cancels tasks (taskapi.Canceller) named by sequence (seq,
// repeated), each with the state the page that offered it showed (was,
// in the order of seq): a task's page offers its task when it is READY,
// ACTIVE or SUSPENDED, a search, a topic's selection and a failure group
// offer the ones they show, and a page of an identifier's tasks offers
// the READY ones it shows, with identifier. A task no longer in the state shown is left as
// it is, at the confirmation and at the POST, and the cancellation itself
// leaves a task that changed state meanwhile (Store.CancelIn): a
// cancellation never cancels more than the page showed, such as a task
// of the identifier pushed since, or a READY task polled since. reason,
// optional, goes into the tasks' output.
func (s *Server) planCancel(ctx context.Context, f form, preview bool) (*plan, error) {
	seqs, err := f.sequences("seq")
	if err != nil {
		return nil, err
	}
	if len(seqs) == 0 || f.text("state") != "" || f.text("from") != "" || f.text("to") != "" {
		return nil, badRequest("say which tasks by sequence (seq): a task's page, or a page of an identifier's tasks, names them")
	}
	reason := f.text(reasonField)
	if err := ops.CheckReason(reasonField, reason); err != nil {
		return nil, err
	}
	sel, err := selectTasks(ctx, s.cfg.Store, f, nil)
	if err != nil {
		return nil, err
	}
	if was := url.Values(f)[wasField]; len(was) > 0 || !preview {
		if err := sel.keepConfirmed(was); err != nil {
			return nil, err
		}
	}
	sel.keepError()
	identifier, byIdentifier := url.Values(f).Get(identifierField), url.Values(f).Has(identifierField)
	if err := checkCancelled(sel, identifier, byIdentifier); err != nil {
		return nil, err
	}
	p := &plan{Title: "Cancel tasks", Hidden: sel.values(), Tasks: sel.rows(), Back: topicLink(sel.topic)}
	p.Hidden.Set(reasonField, reason)
	if !preview { // the audit records every task confirmed, those skipped now too
		p.Hidden["seq"], p.Hidden[wasField] = seqValues(seqs), url.Values(f)[wasField]
	}
	switch {
	case byIdentifier:
		p.Title = "Cancel READY tasks of an identifier"
		p.Hidden.Set(identifierField, identifier)
		p.Back = link("/topic", url.Values{"topic": {sel.topic}, "identifier": {identifier}})
	case len(seqs) == 1:
		p.Back = taskLink(sel.topic, seqs[0])
	}
	if preview {
		p.Lines, p.None = cancelLines(sel, identifier, byIdentifier, reason)
	}
	p.run = func(ctx context.Context) (*outcome, error) {
		return s.cancel(ctx, p, sel, reason)
	}
	return p, nil
}

// checkCancelled fails unless every task of sel may be cancelled as
// asked: READY, ACTIVE or SUSPENDED, and with identifier, of that
// identifier and READY.
func checkCancelled(sel selection, identifier string, byIdentifier bool) error {
	if !byIdentifier {
		return sel.mustBe(taskapi.State.Cancellable, "only READY, ACTIVE or SUSPENDED tasks can be cancelled")
	}
	if identifier == "" {
		return badRequest("%s is empty: give the identifier whose READY tasks the page showed", identifierField)
	}
	for _, info := range append(slices.Clone(sel.infos), skippedInfos(sel)...) {
		if info.Identifier != identifier {
			return badRequest("task %d is of identifier %q, not %q: nothing was changed", info.Sequence, info.Identifier, identifier)
		}
	}
	return sel.mustBe(func(st taskapi.State) bool { return st == taskapi.Ready },
		"only READY tasks are cancelled with their identifier (cancel an ACTIVE one on its page)")
}

// skippedInfos are the tasks of sel skipped as no longer confirmed, as
// they are now.
func skippedInfos(sel selection) []taskapi.Info {
	out := make([]taskapi.Info, len(sel.skipped))
	for i, sk := range sel.skipped {
		out[i] = sk.info
	}
	return out
}

// cancelLines say what the cancellation of sel would do, and none when
// it would cancel nothing.
func cancelLines(sel selection, identifier string, byIdentifier bool, reason string) (lines []string, none bool) {
	n := int64(len(sel.infos))
	var active []string
	for _, info := range sel.infos {
		if info.State == taskapi.Active {
			active = append(active, fmt.Sprintf("task %d (run by %q)", info.Sequence, info.Owner))
		}
	}
	switch {
	case byIdentifier:
		lines = append(lines, fmt.Sprintf("%s of identifier %q in %q, those the page showed READY, would be CANCELLED for good: never polled, retried or revived.",
			readyWord(n), identifier, sel.topic),
			"Tasks of the identifier pushed since the page was drawn, and its ACTIVE tasks, are left as they are.")
	case n == 1 && !sel.byError:
		lines = append(lines, fmt.Sprintf("Task %d of %q, %s, would be CANCELLED for good: never polled, retried or revived.",
			sel.infos[0].Sequence, sel.topic, sel.infos[0].State))
	default:
		lines = append(lines, fmt.Sprintf("%s would be CANCELLED for good: never polled, retried or revived.", sel.describe()))
	}
	if len(active) > 0 {
		lines = append(lines, fmt.Sprintf("ACTIVE: %s. Its owner's completion, release or failure of it is refused from then on, and taskproc stops its handler; its slot under the topic's limits is free at once.",
			strings.Join(active, ", ")))
	}
	if n > 0 {
		lines = append(lines, fmt.Sprintf("Their output will read %q.", taskapi.CancelOutput(reason)),
			"A task no longer in the state shown here when you confirm is left as it is.")
	}
	for _, sk := range sel.skipped {
		lines = append(lines, fmt.Sprintf("Task %d is %s now, not %s as the page showed: it would be left as it is.", sk.info.Sequence, sk.info.State, sk.was))
	}
	if n == 0 {
		lines = append(lines, "No task is as the page showed it: nothing would be cancelled.")
	}
	return lines, n == 0
}

// readyWord writes n READY tasks: "1 READY task", "3 READY tasks".
func readyWord(n int64) string {
	if n == 1 {
		return "1 READY task"
	}
	return num(n) + " READY tasks"
}

// cancel cancels the tasks of sel that are still in the state
// confirmed, and says which it cancelled and which it left.
func (s *Server) cancel(ctx context.Context, p *plan, sel selection, reason string) (*outcome, error) {
	confirmed := make(map[int64]taskapi.State, len(sel.infos))
	for _, info := range sel.infos {
		confirmed[info.Sequence] = info.State
	}
	var cancelled []taskapi.Cancellation
	if len(confirmed) > 0 {
		var err error
		if cancelled, err = s.cfg.Store.CancelIn(ctx, sel.topic, reason, confirmed); err != nil {
			return nil, err
		}
	}
	o := &outcome{Title: "Cancelled", Back: p.Back, Changed: int64(len(cancelled)),
		Lines: []string{fmt.Sprintf("cancelled %s of %q.", tasksWord(int64(len(cancelled))), sel.topic)}}
	done := map[int64]bool{}
	for _, c := range cancelled {
		done[c.Task.Sequence] = true
		if c.Owner != "" {
			o.Lines = append(o.Lines, fmt.Sprintf("task %d was ACTIVE, run by %q: its owner's result is refused from now on.", c.Task.Sequence, c.Owner))
		}
	}
	var seqs []int64
	for _, info := range sel.infos {
		seqs = append(seqs, info.Sequence)
		if !done[info.Sequence] {
			o.Lines = append(o.Lines, fmt.Sprintf("skipped task %d: it is no longer %s as confirmed; it was left as it is.", info.Sequence, info.State))
		}
	}
	o.Lines = append(o.Lines, sel.skippedLines()...)
	for _, sk := range sel.skipped {
		seqs = append(seqs, sk.info.Sequence)
	}
	slices.Sort(seqs)
	var err error
	if o.Tasks, err = readRows(ctx, s.cfg.Store, sel.topic, seqs); err != nil {
		return nil, err
	}
	return o, nil
}

// cancelOffer is a form that offers to cancel tasks a page shows: their
// sequences and the states shown, as planCancel takes them.
type cancelOffer struct {
	Hidden     url.Values
	Count      int
	Identifier bool // the READY tasks of an identifier, not one task
}

// offerCancel returns the offer to cancel the task of info, nil unless it
// is READY or ACTIVE.
func offerCancel(topic string, info taskapi.Info) *cancelOffer {
	if info.State != taskapi.Ready && info.State != taskapi.Active {
		return nil
	}
	return &cancelOffer{Count: 1, Hidden: url.Values{"topic": {topic}, "seq": {itoa(info.Sequence)}, wasField: {info.State.String()}}}
}

// offerCancelReady returns the offer to cancel the READY tasks of
// identifier among infos, the tasks a page shows; nil when it shows none.
func offerCancelReady(topic, identifier string, infos []taskapi.Info) *cancelOffer {
	var ready []taskapi.Info
	for _, info := range infos {
		if info.State == taskapi.Ready && info.Identifier == identifier && !slices.ContainsFunc(ready, func(r taskapi.Info) bool { return r.Sequence == info.Sequence }) {
			ready = append(ready, info)
		}
	}
	if len(ready) == 0 || len(ready) > maxSelected {
		return nil
	}
	slices.SortFunc(ready, func(x, y taskapi.Info) int { return cmp.Compare(x.Sequence, y.Sequence) })
	o := &cancelOffer{Count: len(ready), Identifier: true, Hidden: url.Values{"topic": {topic}, identifierField: {identifier}}}
	for _, info := range ready {
		o.Hidden.Add("seq", itoa(info.Sequence))
		o.Hidden.Add(wasField, info.State.String())
	}
	return o
}
