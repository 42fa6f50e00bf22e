package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

// sessionCookie holds a session: a random identifier and its signature by
// the process's secret, so that it needs no storage and ends with the
// process.
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

// cookieSession returns the session of r's cookie when its signature holds.
func (s *Server) cookieSession(r *http.Request) (string, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return "", false
	}
	id, sig, ok := strings.Cut(c.Value, ".")
	if !ok || id == "" || !hmac.Equal([]byte(sig), []byte(s.sign("session", id))) {
		return "", false
	}
	return id, true
}

// startSession sets a new session cookie on w and returns its id.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request) string {
	id := rand.Text()
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id + "." + s.sign("session", id), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	})
	return id
}

// tokenMatches compares a token given by the user with the server's in
// constant time.
func (s *Server) tokenMatches(given string) bool {
	a, b := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
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
			if !ok || !s.tokenMatches(given) {
				s.refuse(w, r, "the Authorization header does not carry the dashboard's token")
				return
			}
			next.ServeHTTP(w, withSession(r, bearerSession))
			return
		}
		if id, ok := s.cookieSession(r); ok {
			next.ServeHTTP(w, withSession(r, id))
			return
		}
		if s.cfg.Token == "" {
			next.ServeHTTP(w, withSession(r, s.startSession(w, r)))
			return
		}
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, link("/login", url.Values{"next": {r.URL.RequestURI()}}), http.StatusSeeOther)
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
	Problem string
}

// loginPage shows the login form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Token == "" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", frame{Title: "Log in", Data: loginData{Next: localPath(r.URL.Query().Get("next"))}})
}

// login checks the token of the login form, starts a session and goes on
// to the page the user asked for.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.PostFormValue("next"))
	if s.cfg.Token == "" {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if !s.tokenMatches(r.PostFormValue("token")) {
		s.render(w, r, http.StatusUnauthorized, "login", frame{Title: "Log in", Data: loginData{Next: next, Problem: "That is not the token."}})
		return
	}
	s.startSession(w, r)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the browser's session.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// localPath returns p when it is a path of this server, "/" otherwise, so
// that the login never sends the browser elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || strings.ContainsAny(p, "\r\n") {
		return "/"
	}
	return p
}
