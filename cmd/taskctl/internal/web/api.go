package web

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// The JSON API serves the data of every page, read-only, as JSON: under
// /api/ (/api/topic?topic=orders is the data of /topic?topic=orders), or
// at the page's own address with an Accept header that names
// application/json. It is behind the same token: a script gives it in an
// Authorization: Bearer header. The data is what the page's template
// shows, each field under its Go name, the enums by their names; the
// charts, which are drawings, are left out. Errors are JSON too, with the
// page's status. Actions are not part of it: their forms are the
// dashboard's, with a confirmation an operator reads.

// apiPrefix is where the JSON API serves the pages.
const apiPrefix = "/api"

// apiRequest marks the context of a request of the JSON API.
type apiRequest struct{}

// asAPI serves next as the JSON API, the pages' paths under apiPrefix.
func asAPI(next http.Handler) http.Handler {
	next = http.StripPrefix(apiPrefix, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiRequest{}, true)))
	})
}

// wantsJSON reports whether r asks for JSON: a request of the JSON API,
// or one whose Accept header names application/json.
func wantsJSON(r *http.Request) bool {
	if r.Context().Value(apiRequest{}) != nil || strings.HasPrefix(r.URL.Path, apiPrefix+"/") {
		return true
	}
	for _, accepted := range strings.Split(r.Header.Get("Accept"), ",") {
		if media, _, err := mime.ParseMediaType(strings.TrimSpace(accepted)); err == nil && media == "application/json" {
			return true
		}
	}
	return false
}

// apiError is an error of the JSON API.
type apiError struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
	Audit  string `json:"audit,omitempty"` // that the audit record of a refused action failed
}

// writeJSON answers with v as JSON, with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		s.log.Printf("the JSON of a page: %v", err)
		status, body = http.StatusInternalServerError, []byte(`{"status": 500, "error": "the page's data could not be written as JSON"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
