package web

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// neighbours is how many of the identifier's other tasks a task's page
// lists each way.
const neighbours = 10

// taskData is a task's page.
type taskData struct {
	Topic      string
	TopicLink  string
	Info       taskapi.Info
	Attempts   []taskproc.Attempt
	Next       time.Time         // when the next attempt is due: a retried task READY and deferred
	Earlier    []taskRow         // the identifier's tasks before this one, newest first
	Later      []taskRow         // the identifier's tasks after this one
	Recreated  []taskRow         // of Earlier, those revived as a later task: the lineage
	CarriedOn  *taskRow          // the task that carries this one on, when it was RECREATED
	Identifier string            // the link to every task of the identifier
	Act        map[string]string // the links to the actions on this task, by action
	Revivable  bool
	Deferrable bool
	// Cancel offers to cancel the task when it is READY, ACTIVE or
	// SUSPENDED, and
	// CancelReady the READY tasks of its identifier that the page shows
	// (action_cancel.go); nil otherwise.
	Cancel, CancelReady *cancelOffer
	ReadOnly            bool
}

// taskPage shows every field of one task, its input and output as text,
// the identifier's other tasks around it and its lineage of revivals.
func (s *Server) taskPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	f := form(r.URL.Query())
	topic, err := f.topic(ctx, s.cfg.Reads, "topic")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	seq, err := f.sequence("seq")
	if err == nil && seq == 0 {
		err = badRequest("no task: give seq")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	infos, err := ops.LookupInfos(ctx, s.cfg.Reads, topic, []int64{seq})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := taskData{Topic: topic, TopicLink: topicLink(topic), Info: infos[0], ReadOnly: s.cfg.ReadOnly,
		Act: map[string]string{}}
	for _, a := range []string{"revive", "reassign", "defer"} {
		d.Act[a] = link("/action/"+a, url.Values{"topic": {topic}, "seq": {itoa(seq)}})
	}
	d.Attempts, _ = taskproc.Attempts(d.Info.Output)
	if len(d.Attempts) > 0 && d.Info.State == taskapi.Ready {
		d.Next = d.Info.NotBefore
	}
	d.Revivable, d.Deferrable = d.Info.State.Revivable(), d.Info.State == taskapi.Ready
	d.Cancel = offerCancel(topic, d.Info)
	d.Identifier = link("/topic", url.Values{"topic": {topic}, "identifier": {d.Info.Identifier}})
	if err := s.relatives(r, &d); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "task", frame{Title: "Task " + itoa(seq), Nav: "topics", Data: d})
}

// relatives reads the identifier's tasks on each side of the task (two
// index probes) and finds its lineage among them.
func (s *Server) relatives(r *http.Request, d *taskData) error {
	ctx, same := r.Context(), taskapi.Listing{Identifier: d.Info.Identifier}
	earlier, err := s.cfg.Reads.Page(ctx, d.Topic, same, d.Info.Sequence, neighbours, taskapi.Backward)
	if err != nil {
		return err
	}
	later, err := s.cfg.Reads.Page(ctx, d.Topic, same, d.Info.Sequence, neighbours, taskapi.Forward)
	if err != nil {
		return err
	}
	d.Earlier, d.Later = rowsOf(d.Topic, earlier), rowsOf(d.Topic, later)
	d.CancelReady = offerCancelReady(d.Topic, d.Info.Identifier, append(append(earlier, d.Info), later...))
	for _, row := range d.Earlier {
		if row.Info.State == taskapi.Recreated {
			d.Recreated = append(d.Recreated, row)
		}
	}
	if d.Info.State == taskapi.Recreated && len(d.Later) > 0 {
		d.CarriedOn = &d.Later[0]
	}
	return nil
}

// itoa writes a sequence in decimal.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
