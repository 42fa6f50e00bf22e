package web

import (
	"encoding/json"
	"fmt"
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
		strs := paramStrings(values[name])
		if name != "topic" && len(strs) > 1 {
			out = append(out, auditParam{Name: name, Value: compact(strs)})
			continue
		}
		for _, v := range strs {
			p := auditParam{Name: name, Value: v}
			if name == "topic" {
				p.Link = topicLink(v)
			}
			out = append(out, p)
		}
	}
	return out
}

// compact writes the values of one parameter in one line: runs of
// consecutive integers as ranges (seq=1–500, 502) and runs of one value
// as the value and its count (was=FAILED ×500). An action on a thousand
// chosen tasks took a line per task, and the audit page 8,632 px for 32
// entries.
func compact(values []string) string {
	var parts []string
	for i := 0; i < len(values); {
		if j := integerRun(values, i); j-i > 1 {
			parts = append(parts, values[i]+"–"+values[j-1])
			i = j
			continue
		}
		j := i + 1
		for j < len(values) && values[j] == values[i] {
			j++
		}
		if j-i > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", values[i], j-i))
		} else {
			parts = append(parts, values[i])
		}
		i = j
	}
	return strings.Join(parts, ", ")
}

// integerRun returns the end of the run of consecutive integers that
// starts at values[i] (i+1 when values[i] is not an integer).
func integerRun(values []string, i int) int {
	first, err := strconv.ParseInt(values[i], 10, 64)
	if err != nil {
		return i + 1
	}
	j := i + 1
	for j < len(values) {
		n, err := strconv.ParseInt(values[j], 10, 64)
		if err != nil || n != first+int64(j-i) {
			break
		}
		j++
	}
	return j
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
