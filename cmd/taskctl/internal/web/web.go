// Package web is taskctl's dashboard, run by 'taskctl serve': pages of
// every topic, of one topic's tasks, of one task, of the owners and of
// the results, drawn on the server with html/template and SVG, and the
// operator's actions (pause, resume and drain topics, set their capacity and limits; revive, reassign,
// defer, cancel and purge tasks; expire silent owners), each behind a confirmation
// page that changes nothing.
//
// Pages answer from the last reading of a sampler (sampler.go) where the
// figures would otherwise need a count over a whole topic, and from its
// memory of the completions of the last day (completions.go), and read
// the database per request only through index-backed calls (Page with a
// cursor, Lookup, Roster; Results for a window beyond that memory). A
// confirmation counts what its action would change within a time budget,
// and shows a bound from the sampler's last count beyond it (budget.go).
// The sampler also flags the topics an operator should look at (health.go),
// and the pages mark the names that hold hidden characters (hidden.go).
// Every action that ran is recorded in the database's audit log, with who
// acted (audit.go), which the audit page lists (page_audit.go).
//
// Every response carries strict security headers (headers.go); a request
// under a host name the server does not answer to is refused before
// anything else (hosts.go: DNS rebinding); every action is a POST that
// needs the session's CSRF value (csrf.go) and, when a token is set, a
// session (auth.go) that a logout, its age or its idleness ends
// (sessions.go), got with a token whose guessing is throttled
// (throttle.go).
package web

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Store is what the dashboard needs of a repository: a subset of the
// methods of taskctl's store, with the same signatures, each call a
// transaction of its own.
type Store interface {
	ops.Store
	Topics(ctx context.Context) ([]string, error)
	Activations(ctx context.Context) (map[string]taskapi.Activation, error)
	SetActivation(ctx context.Context, topic string, a taskapi.Activation) error
	// Capacities and SetCapacity read and set the capacities of topics
	// (taskapi.Capacitor; action_capacity.go).
	Capacities(ctx context.Context) (map[string]taskapi.Capacity, error)
	SetCapacity(ctx context.Context, topic string, capacity taskapi.Capacity) error
	// Limits and SetLimits read and set the limits of topics
	// (taskapi.Regulator; action_limits.go).
	Limits(ctx context.Context) (map[string]taskapi.Limits, error)
	SetLimits(ctx context.Context, topic string, limits taskapi.Limits) error
	Results(ctx context.Context, from, to time.Time) (map[string]map[taskapi.Result]int64, error)
	ReviveTasks(ctx context.Context, topic string, how taskapi.Revivification, tasks []taskapi.Task) ([]taskapi.Revival, error)
	Reassign(ctx context.Context, topic string, assignments []taskapi.Assignment) error
	ReassignAll(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range) (int64, error)
	ReassignCompletedBy(ctx context.Context, topic string, from taskapi.State, to taskapi.Result, span taskapi.Range, completedBy time.Time) (int64, error)
	// CancelIn cancels the tasks of a topic that are, as they are
	// cancelled, in the state given for each, READY, ACTIVE or SUSPENDED, and
	// returns them; the others are left as they are (action_cancel.go).
	CancelIn(ctx context.Context, topic, reason string, confirmed map[int64]taskapi.State) ([]taskapi.Cancellation, error)
	Now(ctx context.Context) (time.Time, error)
	Owners(ctx context.Context, within time.Duration) ([]string, error)
	Expire(ctx context.Context, after time.Duration) (int64, error)
	Roster(ctx context.Context) ([]taskapi.OwnerStatus, error)
	// Find finds tasks of a topic by prefixes, newest first (search.go).
	Find(ctx context.Context, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error)
	// Record and AuditLog write and read the audit log of the actions
	// (audit.go, page_audit.go).
	Record(ctx context.Context, entry taskapi.AuditEntry) (taskapi.AuditEntry, error)
	AuditLog(ctx context.Context, before int64, limit int) ([]taskapi.AuditEntry, error)
	// Pages runs read in one transaction, with a Pager that reads in it.
	Pages(ctx context.Context, read func(p ops.Pager) error) error
}

// Config is how a Server runs.
type Config struct {
	// Store is the repository shown and changed.
	Store Store
	// Reads, when set, is where the pages and the sampler read the same
	// repository instead: a hot standby that follows Store. Actions, their
	// confirmations and the audit records still go to Store, so that what
	// an operator confirms is read where the action runs. No method that
	// writes is called on it.
	Reads Store
	// Database is the database's URL as the user may see it (no password).
	Database string
	// Token, when set, is required of every request but the login page
	// and the static files: as a session cookie got at /login, or as a
	// bearer Authorization header.
	Token string
	// Schema, when set, reads the version of Store's taskrepo schema and
	// the latest this taskctl brings, for /healthz (healthz.go); without
	// it /healthz reads the database's clock to see that it answers.
	Schema func(ctx context.Context) (current, latest int64, err error)
	// Hosts are the host names served besides the loopback ones
	// (localhost, 127.0.0.0/8, ::1), with any port (hosts.go). Without a
	// Token only those are served, so that a page under a name that
	// resolves to this machine (DNS rebinding) gets nothing; with a Token
	// every host is, unless Hosts names some.
	Hosts []string
	// ReadOnly serves the pages without any action.
	ReadOnly bool
	// BasePath serves the dashboard under a path prefix, such as
	// /ops/tasks, behind a reverse proxy that passes requests on with
	// their whole path (basepath.go); empty: at the root.
	BasePath string
	// Expiry is how long an owner may stay silent before it counts as
	// fenced (taskproc's default: 30s).
	Expiry time.Duration
	// Refresh is how often the sampler reads the figures and the overview
	// refreshes (default 5s).
	Refresh time.Duration
	// CountBudget bounds how long a confirmation page counts the tasks an
	// action would change (default 120ms). A count that takes longer is
	// stopped, and the page shows a bound from the sampler's last count
	// instead; the result page after the action says exactly what changed.
	CountBudget time.Duration
	// ReadTimeout bounds how long a page (every GET: pages, fragments,
	// confirmations) may read the database, the wait for a connection
	// included (default 2s): beyond it the reading is stopped, on
	// PostgreSQL by the server too, and the page says so (deadline.go).
	// Actions (POST) are not bound by it.
	ReadTimeout time.Duration
	// FilteredPages bounds how many pages filtered by state or by a time
	// window read the database at once (default 2; gate.go): the others
	// wait their turn within ReadTimeout, so that they never take the
	// whole pool from the other pages.
	FilteredPages int
	// SessionMaxAge ends a session this long after its login, and
	// SessionIdle once no page was asked for in it for this long (the
	// overview's own refreshes do not count); defaults 12h and 1h. They
	// apply with a Token: without one there is no login to end.
	SessionMaxAge, SessionIdle time.Duration
	// Now is the clock of the sessions and of the throttling of logins
	// (default time.Now); tests move it.
	Now func() time.Time
	// Log receives the errors of the server (default: discarded).
	Log io.Writer
}

// DefaultExpiry and DefaultRefresh are the defaults of Config, and
// MinRefresh the shortest refresh it takes.
const (
	DefaultExpiry  = 30 * time.Second
	DefaultRefresh = 5 * time.Second
	MinRefresh     = 100 * time.Millisecond
	// DefaultCountBudget leaves a confirmation page within 200 ms.
	DefaultCountBudget = 120 * time.Millisecond
	// DefaultReadTimeout leaves a page that a busy database slows ten
	// times its usual 200 ms, and stops one that would hold a connection
	// for longer; MinReadTimeout leaves a page time to read at all.
	DefaultReadTimeout = 2 * time.Second
	MinReadTimeout     = 10 * time.Millisecond
	// DefaultFilteredPages is a quarter of taskctl serve's default pool.
	DefaultFilteredPages = 2
	// DefaultSessionMaxAge and DefaultSessionIdle are a working day, and
	// an hour away from the dashboard.
	DefaultSessionMaxAge = 12 * time.Hour
	DefaultSessionIdle   = time.Hour
)

// window is how much of the past the charts show.
const window = time.Hour

// Server is a dashboard.
type Server struct {
	cfg      Config
	secret   []byte    // per process: signs sessions and derives CSRF values
	sessions *sessions // the logged-in sessions, with a token
	throttle *throttle // of wrong tokens
	sampler  *sampler
	counts   *dbCounts // results windows counted in the database (counting.go)
	filtered gate      // of the pages filtered by state or time window
	health   healthCache
	views    views
	handler  http.Handler
	log      *log.Logger
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("web: no store")
	}
	if cfg.Reads == nil {
		cfg.Reads = cfg.Store
	}
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	cfg.Refresh = max(cfg.Refresh, MinRefresh)
	if cfg.CountBudget <= 0 {
		cfg.CountBudget = DefaultCountBudget
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.FilteredPages <= 0 {
		cfg.FilteredPages = DefaultFilteredPages
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = DefaultSessionMaxAge
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	base, err := CheckBasePath(cfg.BasePath)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	cfg.BasePath = base
	v, err := loadViews()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, secret: make([]byte, 32), views: v, log: log.New(cfg.Log, "taskctl serve: ", log.LstdFlags)}
	rand.Read(s.secret)
	s.sessions = newSessions(cfg.SessionMaxAge, cfg.SessionIdle, cfg.Now)
	s.throttle = newThrottle(cfg.Now)
	s.sampler = newSampler(cfg.Reads, cfg.Refresh, cfg.Expiry, s.log)
	s.counts = newDBCounts(cfg.Reads)
	s.filtered = newGate(cfg.FilteredPages)
	s.handler = s.routes()
	return s, nil
}

// shutdownPatience bounds how long Serve waits for requests under way
// when it stops.
const shutdownPatience = 5 * time.Second

// Serve takes a first reading of the database, then serves HTTP on ln
// until ctx ends, and then stops the sampler and waits for the requests
// under way. It returns an error when the first reading fails or ln
// fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.sampler.start(ctx); err != nil {
		_ = ln.Close() // nothing was served on it: the reading's error is the one to report
		return fmt.Errorf("first reading of the database: %w", err)
	}
	defer s.sampler.stop()
	s.counts.start(ctx)
	defer s.counts.wait()
	hs := &http.Server{
		Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, ErrorLog: s.log,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownPatience)
	defer cancel()
	err := hs.Shutdown(stopCtx)
	if end := <-served; !errors.Is(end, http.ErrServerClosed) { // what Serve returns once Shutdown began
		err = errors.Join(err, end)
	}
	return err
}
