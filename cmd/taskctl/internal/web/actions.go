package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/taskrepo/taskrepo/taskapi"
)

// An action is one of the operator's changes, at /action/NAME: its GET
// shows what it would change and changes nothing, its POST (with the CSRF
// value) makes the change and shows what changed.
type action struct {
	name string
	// plan checks the values of the request and says what the action
	// would do; preview is true for the confirmation, which also counts
	// what would change.
	plan func(ctx context.Context, f form, preview bool) (*plan, error)
}

// actions returns every action.
func (s *Server) actions() []action {
	return []action{
		{"activation", s.planActivation},
		{"capacity", s.planCapacity},
		{"limits", s.planLimits},
		{"revive", s.planRevive},
		{"reassign", s.planReassign},
		{"defer", s.planDefer},
		{"cancel", s.planCancel},
		{"retry", s.planRetry},
		{"purge", s.planPurge},
		{"expire", s.planExpire},
	}
}

// plan is what an action would do.
type plan struct {
	Title  string
	Action string     // where the confirmation POSTs: /action/NAME
	Hidden url.Values // the checked values that the confirmation sends back
	Choose []field    // values the user has yet to choose: asked first
	Lines  []string   // what would change
	Tasks  []taskRow  // the tasks named
	None   bool       // nothing would change: nothing to confirm
	Back   string     // the page the action came from
	run    func(ctx context.Context) (*outcome, error)
}

// field is a value the confirmation asks for.
type field struct {
	Name, Label, Value, Help string
	Options                  []string // a choice among these; a text field when empty
}

// outcome is what an action changed.
type outcome struct {
	Title string
	Lines []string
	Tasks []taskRow
	Back  string
	// Changed counts what changed, for the audit log: tasks, or topics
	// for an activation.
	Changed int64
	// AuditFailure says that the audit record of the action failed.
	AuditFailure string
}

// confirmHandler serves the confirmation of a: it shows what would change.
func (s *Server) confirmHandler(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := a.plan(r.Context(), form(r.URL.Query()), true)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		p.Action = "/action/" + a.name
		p.Lines, p.Tasks = listedRows(p.Lines, p.Tasks)
		s.render(w, r, http.StatusOK, "confirm", frame{Title: p.Title, Data: p})
	}
}

// doHandler runs a with the values of the POST and shows what changed.
func (s *Server) doHandler(a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := a.plan(r.Context(), form(r.PostForm), false)
		if err == nil && len(p.Choose) > 0 {
			err = badRequest("%s: %s is missing", p.Title, p.Choose[0].Label)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		o, err := p.run(r.Context())
		s.sampler.poke()
		audit := s.recordAction(r, a.name, p, o, err)
		if err != nil {
			s.failAudited(w, r, err, audit)
			return
		}
		o.Lines, o.Tasks = listedRows(o.Lines, o.Tasks)
		s.render(w, r, http.StatusOK, "done", frame{Title: o.Title, Data: o})
	}
}

// maxRowsListed bounds the tasks a confirmation or a result lists: an
// action may name ten thousand.
const maxRowsListed = 100

// listedRows cuts rows to maxRowsListed, and says so in lines.
func listedRows(lines []string, rows []taskRow) ([]string, []taskRow) {
	if len(rows) <= maxRowsListed {
		return lines, rows
	}
	return append(lines, fmt.Sprintf("The first %d of the %s are listed below.", maxRowsListed, tasksWord(int64(len(rows))))), rows[:maxRowsListed]
}

// tasksWord writes n tasks: "1 task", "12 tasks".
func tasksWord(n int64) string {
	if n == 1 {
		return "1 task"
	}
	return num(n) + " tasks"
}

// spanText describes a range of sequences.
func spanText(span taskapi.Range) string {
	switch {
	case span == taskapi.Unbounded:
		return "any sequence"
	case span.To == taskapi.MaxSequence:
		return fmt.Sprintf("sequences from %d on", span.From)
	case span.From == taskapi.Inception:
		return fmt.Sprintf("sequences up to %d", span.To)
	}
	return fmt.Sprintf("sequences %d to %d", span.From, span.To)
}

// spanValues writes a range as the form values from and to.
func spanValues(v url.Values, span taskapi.Range) {
	if span.From != taskapi.Inception {
		v.Set("from", strconv.FormatInt(span.From, 10))
	}
	if span.To != taskapi.MaxSequence {
		v.Set("to", strconv.FormatInt(span.To, 10))
	}
}
