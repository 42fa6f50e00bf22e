package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// sessionCookie holds a session: a random identifier and its signature by
// the process's secret. Without a token that is all (the session only
// binds the CSRF values, and ends with the process); with a token the
// identifier must also name a live session of the server's (sessions.go).
const sessionCookie = "taskctl_session"

// bearerSession is the session of the requests that send the token as a
// bearer Authorization header (scripts).
const bearerSession = "bearer"

type sessionKey struct{}

// sessionOf returns the session of an authenticated request.
func sessionOf(r *http.Request) (string, bool) {
	id, ok := r.Context().Value(sessionKey{}).(string)
	return id, ok
}

// withSession returns r carrying the session id.
func withSession(r *http.Request, id string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, id))
}

// sign returns the MAC of the parts, under the process's secret.
func (s *Server) sign(parts ...string) string {
	mac := hmac.New(sha256.New, s.secret)
	mac.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// cookieSession returns the session of r's cookie when its signature
// holds and, with a token, when the session is live; signed says that the
// cookie was this process's, live or not.
func (s *Server) cookieSession(r *http.Request) (id string, live, signed bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false, false
	}
	id, sig, ok := strings.Cut(c.Value, ".")
	if !ok || id == "" || !hmac.Equal([]byte(sig), []byte(s.sign("session", id))) {
		return "", false, false
	}
	if s.cfg.Token != "" && !s.sessions.use(id, !selfRefresh(r)) {
		return "", false, true
	}
	return id, true, true
}

// selfRefresh says whether r is one the overview makes by itself to
// refresh its figures, which keeps no session from going idle: a page
// left open is no operator at work.
func selfRefresh(r *http.Request) bool { return r.URL.Path == "/live" }

// startSession sets a new session cookie on w and returns its id: a
// session of the server's, with a token, labelled with the operator's name
// given at login (empty for none).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, label string) string {
	c := &http.Cookie{
		Name: sessionCookie, Path: s.cookiePath(), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	}
	// A cookie without Max-Age: the browser drops it when it closes, and
	// the server ends the session anyway after its maximum age.
	id := rand.Text()
	if s.cfg.Token != "" {
		id = s.sessions.startAs(label)
	}
	c.Value = id + "." + s.sign("session", id)
	http.SetCookie(w, c)
	return id
}

// tokenMatches compares a token given by the user with the server's in
// constant time, unless r's client, or every client, must wait after too
// many wrong tokens (throttle.go); wait is then how long.
func (s *Server) tokenMatches(r *http.Request, given string) (ok bool, wait time.Duration) {
	return s.throttle.try(clientOf(r), func() bool {
		a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(s.cfg.Token))
		return subtle.ConstantTimeCompare(a[:], b[:]) == 1
	})
}

// tooMany answers 429 with the error page to a client that must wait.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	retryAfter(w, wait)
	s.fail(w, r, &httpError{status: http.StatusTooManyRequests, msg: tooManyMessage(wait)})
}

// tooManyMessage tells a client how long it must wait.
func tooManyMessage(wait time.Duration) string {
	return fmt.Sprintf("Too many wrong tokens: no token is checked for %s. Nothing was changed.", dur(wait.Round(time.Second)))
}

// authenticate lets through requests with a session. Without a token every
// browser gets a session at its first request (it binds the CSRF values).
// With a token, a request needs a session cookie from /login or the token
// as a bearer Authorization header; otherwise a page is sent to the login
// form and anything else is refused with 401.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if auth := r.Header.Get("Authorization"); auth != "" && s.cfg.Token != "" {
			given, ok := strings.CutPrefix(auth, "Bearer ")
			var wait time.Duration
			if ok {
				ok, wait = s.tokenMatches(r, given)
			}
			if wait > 0 {
				s.tooMany(w, r, wait)
				return
			}
			if !ok {
				s.refuse(w, r, "the Authorization header does not carry the dashboard's token")
				return
			}
			next.ServeHTTP(w, withSession(r, bearerSession))
			return
		}
		id, live, signed := s.cookieSession(r)
		if live {
			next.ServeHTTP(w, withSession(r, id))
			return
		}
		if s.cfg.Token == "" {
			next.ServeHTTP(w, withSession(r, s.startSession(w, r, "")))
			return
		}
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !wantsJSON(r) {
			to := url.Values{"next": {r.URL.RequestURI()}}
			if signed {
				to.Set("ended", "1")
			}
			http.Redirect(w, r, link("/login", to), http.StatusSeeOther)
			return
		}
		if signed {
			s.refuse(w, r, "your session has ended (logged out, idle or too old): log in again; nothing was changed")
			return
		}
		if wantsJSON(r) {
			s.refuse(w, r, "this dashboard needs its token: give it in an Authorization: Bearer header")
			return
		}
		s.refuse(w, r, "log in first: this dashboard needs its token")
	})
}

// refuse answers 401 with the error page.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="taskctl"`)
	s.fail(w, r, &httpError{status: http.StatusUnauthorized, msg: msg})
}

// loginData is what the login form shows.
type loginData struct {
	Next    string
	Name    string // the name given, shown again after a problem
	Problem string
	Ended   string // why the session ended, when it did
}

// loginPage shows the login form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	d := loginData{Next: localPath(r.URL.Query().Get("next"))}
	if r.URL.Query().Get("ended") != "" {
		d.Ended = fmt.Sprintf("Your session has ended: you logged out, or it was idle for %s, or it began %s ago. Log in again.",
			dur(s.cfg.SessionIdle), dur(s.cfg.SessionMaxAge))
	}
	s.render(w, r, http.StatusOK, "login", frame{Title: "Log in", Data: d})
}

// login checks the token of the login form, starts a session and goes on
// to the page the user asked for.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.PostFormValue("next"))
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	name := r.PostFormValue("name")
	if problem := checkLabel(name); problem != "" {
		s.render(w, r, http.StatusBadRequest, "login", frame{Title: "Log in", Data: loginData{Next: next, Problem: problem}})
		return
	}
	ok, wait := s.tokenMatches(r, r.PostFormValue("token"))
	if wait > 0 {
		retryAfter(w, wait)
		s.render(w, r, http.StatusTooManyRequests, "login", frame{Title: "Log in", Data: loginData{Next: next, Name: name, Problem: tooManyMessage(wait)}})
		return
	}
	if !ok {
		s.render(w, r, http.StatusUnauthorized, "login", frame{Title: "Log in", Data: loginData{Next: next, Name: name, Problem: "That is not the token."}})
		return
	}
	s.startSession(w, r, strings.TrimSpace(name))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the browser's session, on the server too: its cookie is
// refused afterwards wherever it was copied to.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if id, ok := sessionOf(r); ok && id != bearerSession {
		s.sessions.end(id)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: s.cookiePath(), MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath returns p when it is a plain path of this server (and its
// query), "/" otherwise, so that the login never sends the browser
// elsewhere. A browser drops tabs and newlines from a URL and reads a
// backslash as a slash ("/\t/evil.example/" is "//evil.example/", another
// host), so p may hold no control character or space, no backslash, no
// scheme or host, and its path, decoded, must begin with one slash only.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" ||
		!strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") ||
		strings.ContainsFunc(u.Path, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' }) {
		return "/"
	}
	return p
}
