package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var staticFiles embed.FS

// routes returns the Server's handler: security headers on everything,
// /healthz open, requests under a foreign Host refused (hosts.go),
// cross-origin POSTs refused, the static files and the login form open,
// and every page and action behind authentication and the CSRF check.
// Actions change things through POST only; their GET is the confirmation.
func (s *Server) routes() http.Handler {
	pages := http.NewServeMux()
	pages.HandleFunc("GET /{$}", s.overview)
	pages.HandleFunc("GET /topic", s.topicPage)
	pages.HandleFunc("GET /task", s.taskPage)
	pages.HandleFunc("GET /owners", s.ownersPage)
	pages.HandleFunc("GET /results", s.resultsPage)
	pages.HandleFunc("GET /failures", s.failuresPage)
	pages.HandleFunc("GET /search", s.searchPage)
	pages.HandleFunc("GET /audit", s.auditPage)
	pages.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, notFound("no page %q here", r.URL.Path))
	})
	app := http.NewServeMux()
	app.Handle("/", pages)
	app.Handle("GET "+apiPrefix+"/", asAPI(pages)) // the pages' data as JSON (api.go)
	app.HandleFunc("GET /live", s.live)
	app.HandleFunc("POST /logout", s.logout)
	for _, a := range s.actions() {
		confirm, do := s.confirmHandler(a), s.doHandler(a)
		if s.cfg.ReadOnly {
			confirm, do = s.readOnly, s.readOnly
		}
		app.HandleFunc("GET /action/"+a.name, confirm)
		app.HandleFunc("POST /action/"+a.name, do)
	}

	static, _ := fs.Sub(staticFiles, "static")
	root := http.NewServeMux()
	root.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	root.HandleFunc("GET /login", s.loginPage)
	root.HandleFunc("POST /login", s.login)
	root.Handle("/", s.authenticate(s.checkCSRF(s.withDeadline(app))))

	cross := http.NewCrossOriginProtection()
	cross.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, &httpError{status: http.StatusForbidden, msg: "a request from another site was refused: nothing was changed"})
	}))
	// /healthz answers under any Host and without a session: an
	// orchestrator's probe names the address it dials, and the report
	// tells nothing of the tasks (healthz.go).
	top := http.NewServeMux()
	top.HandleFunc("GET /healthz", s.healthz)
	top.Handle("/", s.checkHost(cross.Handler(root)))
	return secure(s.underBase(top))
}

// readOnly refuses an action of a read-only dashboard.
func (s *Server) readOnly(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, &httpError{status: http.StatusForbidden, msg: "this dashboard is read-only (--read-only): it changes nothing"})
}
