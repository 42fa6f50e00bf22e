package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

//go:embed templates/*.html
var templateFiles embed.FS

// views are the parsed pages by name (the file name without .html), each
// with the layout and the partials.
type views map[string]*template.Template

// layoutFiles are the templates that every page is parsed with.
var layoutFiles = []string{"templates/layout.html", "templates/partials.html"}

// loadViews parses every page of templates/.
func loadViews() (views, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFiles, layoutFiles...)
	if err != nil {
		return nil, err
	}
	pages, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	v := views{}
	for _, file := range pages {
		name := strings.TrimSuffix(path.Base(file), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, file)
		if err != nil {
			return nil, err
		}
		v[name] = t
	}
	return v, nil
}

// frame is what the layout shows around every page.
type frame struct {
	Title    string
	Nav      string // the menu item to mark: topics, owners, results, audit
	Database string
	ReadOnly bool
	CSRF     string        // the session's CSRF value, for forms that POST
	Session  bool          // logged in with the token: the page offers to log out
	Failure  string        // the last reading of the sampler failed
	Reload   time.Duration // when not zero, the page reloads itself after this long (a meta refresh)
	Data     any
}

// render writes the page name with data, in the layout, with status.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, f frame) {
	if wantsJSON(r) {
		s.writeJSON(w, status, f.Data)
		return
	}
	s.write(w, status, name, "layout", s.frameFor(r, f))
}

// write executes the template tmpl of page name into a buffer first, so
// that a failure shows as an error and not as half a page.
func (s *Server) write(w http.ResponseWriter, status int, name, tmpl string, data any) {
	var buf bytes.Buffer
	if err := s.views[name].ExecuteTemplate(&buf, tmpl, data); err != nil {
		s.log.Printf("render %s: %v", name, err)
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(s.rebase(buf.Bytes()))
}

// frameFor completes f with what every page shows to a request with a
// session; a request without one (the login form, a refusal) is told
// nothing of the database.
func (s *Server) frameFor(r *http.Request, f frame) frame {
	id, ok := sessionOf(r)
	if !ok { // the login form, or a refusal: nothing about the database
		return f
	}
	f.Database, f.ReadOnly = s.cfg.Database, s.cfg.ReadOnly
	f.CSRF = s.csrfValue(id)
	f.Session = s.cfg.Token != "" && id != bearerSession
	if v := s.sampler.snapshot(); v.failure != nil {
		f.Failure = fmt.Sprintf("the last reading of the database failed %s: %v", ago(v.failedAt), v.failure)
	}
	return f
}

// funcs are the template functions.
var funcs = template.FuncMap{
	"num":      num,
	"ago":      ago,
	"stamp":    stamp,
	"dur":      dur,
	"capacity": capacity,
	"limits":   func(l taskapi.Limits) string { return ops.LimitsCell(l, num) },
	"stateKey": func(s taskapi.State) string { return strings.ToLower(s.String()) },
	"pretty":   pretty,
	// names that may hold hidden characters (hidden.go)
	"named":      named,
	"isolated":   isolated,
	"hiddenMark": hiddenMark,
}

// capacity writes a topic's capacity as num does, "-" for none.
func capacity(n int64) string {
	if n <= 0 {
		return "-"
	}
	return num(n)
}

// num writes n with thousands separators: 1,234,567.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ago says how long ago t was; "-" for the zero time.
func ago(t time.Time) string { return ops.Ago(t, time.Now(), dur) }

// stamp writes t in UTC to the millisecond; "-" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}

// dur writes d shortly: 850ms, 4.2s, 3m05s, 2h10m, 3d4h.
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// pretty indents s when it is JSON and leaves it as it is otherwise; the
// template escapes it either way.
func pretty(s string) string {
	var buf bytes.Buffer
	if json.Valid([]byte(s)) && json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}
