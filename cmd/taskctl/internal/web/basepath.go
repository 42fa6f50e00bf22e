package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// A dashboard behind a reverse proxy that serves it under a prefix
// (Config.BasePath, /ops/tasks) gets the requests with their whole path,
// as a proxy passes them on, and answers outside the prefix with a 404.
// Its pages name its own paths under the prefix: the attributes that the
// templates write with a path of the dashboard (href, action and
// formaction, src, data-live), and the Location of a redirect, are
// rebased. No text of the data can spell such an attribute: the
// templates escape its quotes. The JSON API's links stay relative to the
// dashboard's root.

// CheckBasePath returns base, a path prefix such as /ops/tasks, without
// a trailing slash, or an error that names what is wrong with it; "" and
// "/" are no prefix.
func CheckBasePath(base string) (string, error) {
	if base == "" || base == "/" {
		return "", nil
	}
	base = strings.TrimSuffix(base, "/")
	switch {
	case !strings.HasPrefix(base, "/") || strings.HasPrefix(base, "//"):
		return "", fmt.Errorf("base path %q: give a path that starts with one /, such as /ops/tasks", base)
	case strings.ContainsAny(base, "?#\\\"'<>%& \t\r\n") || strings.Contains(base, "/.") || strings.Contains(base, "//"):
		return "", fmt.Errorf("base path %q: give plain path segments (letters, digits, -, _, .), such as /ops/tasks", base)
	}
	return base, nil
}

// underBase serves h under the base path: a request outside it is a 404,
// the base path itself is sent to the base path and a slash, and what h
// writes names the base path (rebased).
func (s *Server) underBase(h http.Handler) http.Handler {
	base := s.cfg.BasePath
	if base == "" {
		return h
	}
	inner := http.StripPrefix(base, h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == base:
			http.Redirect(w, r, base+"/", http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, base+"/"):
			inner.ServeHTTP(&rebasing{ResponseWriter: w, base: base}, r)
		default:
			http.Error(w, "not found: this dashboard is served under "+base+"/", http.StatusNotFound)
		}
	})
}

// rebasing writes the Location of a redirect under the base path.
type rebasing struct {
	http.ResponseWriter
	base string
}

func (w *rebasing) WriteHeader(status int) {
	if to := w.Header().Get("Location"); strings.HasPrefix(to, "/") && !strings.HasPrefix(to, "//") {
		w.Header().Set("Location", w.base+to)
	}
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *rebasing) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// linkAttributes are the attributes in which the templates write paths of
// the dashboard; action also ends formaction.
var linkAttributes = [][]byte{[]byte(` href="/`), []byte(`action="/`), []byte(` src="/`), []byte(` data-live="/`)}

// rebase writes the paths of the dashboard in page under the base path.
func (s *Server) rebase(page []byte) []byte {
	if s.cfg.BasePath == "" {
		return page
	}
	for _, attr := range linkAttributes {
		page = bytes.ReplaceAll(page, attr, append(attr[:len(attr)-1:len(attr)-1], s.cfg.BasePath+"/"...))
	}
	return page
}

// cookiePath is the path of the session cookie: the base path's.
func (s *Server) cookiePath() string { return s.cfg.BasePath + "/" }
