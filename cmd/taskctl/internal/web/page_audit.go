package web

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// auditLimit is how many entries the audit page shows by default, and
// auditMaxLimit the most it shows.
const (
	auditLimit    = 100
	auditMaxLimit = 500
)

// auditLine is one entry on the audit page.
type auditLine struct {
	taskapi.AuditEntry
	Params []auditParam
}

// auditParam is one value of an entry's parameters; Link, for a topic, is
// its page.
type auditParam struct {
	Name, Value, Link string
}

// auditData is the audit page.
type auditData struct {
	Entries []auditLine
	Newest  bool   // the page begins with the newest entry
	Older   string // the link to the next page of older entries, when any
	Limit   int
}

// auditPage lists the audit log of the actions, newest first, paged by a
// cursor (before: an entry's number); read-only dashboards show it too.
func (s *Server) auditPage(w http.ResponseWriter, r *http.Request) {
	q := form(r.URL.Query())
	before, err := q.sequence("before")
	if err == nil && q.text("before") != "" && before <= 0 {
		err = badRequest("before %q: give an entry's number", q.text("before"))
	}
	var limit int
	if err == nil {
		limit, err = q.number("limit", auditLimit, 1, auditMaxLimit)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context() // within the read timeout (deadline.go): a primary-key read backwards
	// One entry more than shown says whether an older page exists.
	entries, err := s.cfg.Reads.AuditLog(ctx, before, limit+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := auditData{Newest: before == 0, Limit: limit}
	if len(entries) > limit {
		entries = entries[:limit]
		v := url.Values{"before": {strconv.FormatInt(entries[limit-1].ID, 10)}}
		if limit != auditLimit {
			v.Set("limit", strconv.Itoa(limit))
		}
		d.Older = link("/audit", v)
	}
	for _, e := range entries {
		d.Entries = append(d.Entries, auditLine{AuditEntry: e, Params: auditParamsOf(e.Params)})
	}
	s.render(w, r, http.StatusOK, "audit", frame{Title: "Audit log", Nav: "audit", Data: d})
}

// auditParamsOf lists the parameters of an entry (a JSON object of
// strings or lists of strings, as the dashboard and taskctl write them)
// by name; anything else is shown as the text it is.
func auditParamsOf(params string) []auditParam {
	if params == "" {
		return nil
	}
	var values map[string]any
	if err := json.Unmarshal([]byte(params), &values); err != nil {
		return []auditParam{{Value: params}}
	}
	var out []auditParam
	for _, name := range slices.Sorted(maps.Keys(values)) {
		for _, v := range paramStrings(values[name]) {
			p := auditParam{Name: name, Value: v}
			if name == "topic" {
				p.Link = topicLink(v)
			}
			out = append(out, p)
		}
	}
	return out
}

// paramStrings writes one parameter's value as strings: each of a list,
// or the value itself.
func paramStrings(v any) []string {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
			continue
		}
		b, _ := json.Marshal(item)
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}
