package web

import (
	"crypto/hmac"
	"net/http"
)

// csrfField is the name of the hidden form value that every POST carries.
const csrfField = "csrf"

// csrfValue is the CSRF value of a session: a MAC of the session under the
// process's secret, which a page of another site cannot read or make.
func (s *Server) csrfValue(session string) string { return s.sign("csrf", session) }

// checkCSRF refuses with 403 a POST whose form lacks the session's CSRF
// value; cross-origin POSTs were refused before (CrossOriginProtection).
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			id, ok := sessionOf(r)
			given := r.PostFormValue(csrfField)
			if !ok || given == "" || !hmac.Equal([]byte(given), []byte(s.csrfValue(id))) {
				s.fail(w, r, &httpError{status: http.StatusForbidden,
					msg: "the form's CSRF value is missing or wrong: nothing was changed. Reload the page and try again."})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
