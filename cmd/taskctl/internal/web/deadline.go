package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// No page may stall the dashboard or the database. Every GET (a page, the
// overview's live fragment, a confirmation) runs with a context that ends
// after Config.ReadTimeout: the store's calls give up then, also while
// they wait for a connection of the pool, and on PostgreSQL the store
// sets the transaction's statement_timeout from that deadline, so that
// the server stops the statement itself rather than running it on for a
// page nobody waits for (taskctl's pgtransact.go). A page whose reading
// ran out answers 503 with a page that says so (timedOut), at once.
// Actions (POST) change things and report what they changed: they are
// not cut short by it.

// withDeadline runs next with a context that ends after the read timeout,
// for every request but a POST.
func (s *Server) withDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// retryAfter is what a page whose reading ran out asks the browser to
// wait before it asks again, in seconds.
const readRetryAfter = "5"

// timedOut returns the error a page shows for err: when the page's read
// timeout ended it, an error that says so, whatever the store's error
// looked like; err itself otherwise. The timeout ended it when the context
// of r is past its deadline (the wait for a connection, a statement given
// up on), or when err is a deadline's: PostgreSQL stops the statement a
// little before the deadline, and the store marks that error so.
func (s *Server) timedOut(w http.ResponseWriter, r *http.Request, err error) error {
	ended := errors.Is(r.Context().Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
	if r.Method == http.MethodPost || !ended {
		return err
	}
	w.Header().Set("Retry-After", readRetryAfter)
	return &httpError{status: http.StatusServiceUnavailable, msg: fmt.Sprintf(
		"This page's reading of the database took longer than the dashboard's read timeout (%s, --read-timeout) and was stopped: "+
			"the database is busy, or locked by another transaction, or the page reads too much. Nothing was changed. "+
			"Reload in a moment, or narrow the page with a filter.", s.cfg.ReadTimeout)}
}
