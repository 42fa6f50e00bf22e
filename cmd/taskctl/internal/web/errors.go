package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// httpError is an error with the status it answers with; its message is
// shown to the user.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

// badRequest reports bad input: a value that does not parse or does not
// fit; nothing was changed.
func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// notFound reports an unknown topic or task.
func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// conflict reports tasks that are not in the state an action needs.
func conflict(format string, args ...any) error {
	return &httpError{status: http.StatusConflict, msg: fmt.Sprintf(format, args...)}
}

// statusOf returns the status and message of err: its own for an
// httpError, else by the taskapi and ops sentinels in its chain; a
// failure of the database is a 500 with its message.
func statusOf(err error) (int, string) {
	var h *httpError
	switch {
	case errors.As(err, &h):
		return h.status, h.msg
	case errors.Is(err, ops.ErrUsage), errors.Is(err, taskapi.ErrInvalidArgument):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, taskapi.ErrUnknownTopic), errors.Is(err, ops.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, taskapi.ErrStateMismatch):
		return http.StatusConflict, err.Error()
	case errors.Is(err, taskapi.ErrPermission):
		return http.StatusForbidden, "the database refused a privilege that this needs: " + err.Error() +
			". Nothing changed. docs/operating.md lists the grants of a role that acts from the dashboard."
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the request was cancelled: " + err.Error()
	}
	return http.StatusInternalServerError, "the database refused: " + err.Error()
}

// errorData is what the error page shows.
type errorData struct {
	Status  int
	Text    string // the status's text
	Message string
	Audit   string // that the audit record of a refused action failed
}

// fail answers with the error page of err.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	s.failAudited(w, r, err, "")
}

// failAudited is fail for an action whose audit record failed (audit:
// why).
func (s *Server) failAudited(w http.ResponseWriter, r *http.Request, err error, audit string) {
	err = s.timedOut(w, r, err)
	status, msg := statusOf(err)
	if status >= 500 {
		s.log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
	}
	if wantsJSON(r) {
		s.writeJSON(w, status, apiError{Status: status, Error: msg, Audit: audit})
		return
	}
	s.render(w, r, status, "error", frame{
		Title: http.StatusText(status),
		Data:  errorData{Status: status, Text: http.StatusText(status), Message: msg, Audit: audit},
	})
}
