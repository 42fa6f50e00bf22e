package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// The store of every backend is what the dashboard needs.
var _ web.Store = store(nil)

// serveTokenEnv holds the dashboard's token when --token-file is not given.
const serveTokenEnv = "TASKCTL_SERVE_TOKEN"

// minTokenLength is the shortest token serve accepts.
const minTokenLength = 16

// serveFlags are serve's flags.
type serveFlags struct {
	listen, tokenFile, expiry, refresh string
	sessionMaxAge, sessionIdle         string
	readTimeout                        string
	pool                               int
	hosts                              []string
	readOnly                           bool
	basePath                           string
}

// serveApplicationName is the application_name of the dashboard's
// connections to PostgreSQL (unless the URL names one): what
// pg_stat_activity shows of them.
const serveApplicationName = "taskctl serve"

// minServePool is the smallest pool serve takes: one connection for the
// background readings of the figures, one at least for the pages.
const minServePool = 2

// defaultServePool bounds the dashboard's connections whatever the host's
// cores (pgxpool's own default follows them): a few pages and the
// background readings at once, and every other page waits its turn within
// its read timeout rather than taking a connection of the database's.
const defaultServePool = 8

func (a *app) serveCommand() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a web dashboard of the topics, tasks, owners and results, with actions",
		Long: `serve runs a web dashboard of the database: every topic with its figures
and charts, a topic's tasks (filtered, paged), every field of a task, the
owners and their heartbeats, the results of a time window; and the
actions of the other commands (pause, resume, drain; revive, reassign,
defer, cancel, purge; expire), each behind a confirmation page.

It listens on 127.0.0.1:8080 unless --listen says otherwise. A token is
required on any address beyond the loopback one (--token-file FILE, or
$` + serveTokenEnv + `), and then asked for by a login form (or taken
from an "Authorization: Bearer TOKEN" header); with a token it is asked
for on the loopback address too. Without a token it answers only to the
host names localhost, 127.0.0.1 and [::1] and those given with --host,
so that no page under another name that resolves to this machine reads
or acts on it (DNS rebinding); with a token, only once --host is given.
--read-only serves the pages without any action. With --read-database
(a hot standby), the pages read there, and the actions, their
confirmations included, still go to --database; with --read-only too,
--database is not opened at all. Every page's reading
of the database ends after --read-timeout (the server stops its
statements too), and the dashboard opens at most --pool connections.
Put it behind a reverse proxy for TLS. Ctrl-C stops it.`,
		Example: `  taskctl serve                                # http://127.0.0.1:8080/
  taskctl serve --read-only --refresh 10s
  openssl rand -hex 32 > token && taskctl serve --listen :8080 --token-file token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd, f) },
	}
	c.Flags().StringVar(&f.listen, "listen", "127.0.0.1:8080", "the address to listen on (host:port)")
	c.Flags().StringVar(&f.tokenFile, "token-file", "", "a file holding the token that every request needs (default $"+serveTokenEnv+")")
	c.Flags().StringArrayVar(&f.hosts, "host", nil, "a host name the dashboard is served under besides localhost, 127.0.0.1 and [::1] (repeatable; checked without a token, and with one once given)")
	c.Flags().BoolVar(&f.readOnly, "read-only", false, "serve the pages without any action")
	c.Flags().StringVar(&f.basePath, "base-path", "", "serve under this path prefix, such as /ops/tasks, behind a reverse proxy that passes the whole path on")
	c.Flags().StringVar(&f.expiry, "expiry", web.DefaultExpiry.String(), "an owner silent for longer than this counts as fenced")
	c.Flags().StringVar(&f.refresh, "refresh", web.DefaultRefresh.String(), "how often the figures are read and the overview refreshes")
	c.Flags().StringVar(&f.sessionMaxAge, "session-max-age", web.DefaultSessionMaxAge.String(), "with a token, a session ends this long after its login")
	c.Flags().StringVar(&f.sessionIdle, "session-idle", web.DefaultSessionIdle.String(), "with a token, a session ends once no page was asked for in it for this long")
	c.Flags().StringVar(&f.readTimeout, "read-timeout", web.DefaultReadTimeout.String(), "a page whose reading of the database takes longer is stopped, and says so (the wait for a connection included)")
	c.Flags().IntVar(&f.pool, "pool", defaultServePool, "the most connections to the database the dashboard opens at once")
	return c
}

func (a *app) serve(cmd *cobra.Command, f serveFlags) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if err := checkExposure(f.listen, cfg.Token); err != nil {
		return err
	}
	if f.pool < minServePool {
		return usagef("--pool %d: give at least %d (one connection for the background readings, one for the pages)", f.pool, minServePool)
	}
	a.limits = serveLimits(f.pool)
	cfg.FilteredPages = max(f.pool/4, 1)
	if err := a.openDashboard(cmd.Context(), &cfg); err != nil {
		return err
	}
	cfg.Log = a.stderr
	srv, err := web.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.listen, err)
	}
	shown, every := shownAddress(f.listen, ln.Addr())
	if cfg.BasePath != "" {
		shown += strings.TrimPrefix(cfg.BasePath, "/") + "/ (behind a proxy that passes that path on)"
	}
	if every {
		shown += " (every address; Ctrl-C stops)"
	} else {
		shown += " (Ctrl-C stops)"
	}
	a.printf("serving %s at %s\n", cfg.Database, shown)
	return srv.Serve(cmd.Context(), ln)
}

// openDashboard opens the stores of the dashboard into cfg: the pages read
// from --read-database when it is given, and the actions go to --database,
// which a dashboard without actions (--read-only) then does not open.
func (a *app) openDashboard(ctx context.Context, cfg *web.Config) error {
	reads, err := a.openReads(ctx)
	if err != nil {
		return err
	}
	cfg.Store, cfg.Database, cfg.Schema = reads, reads.Shown(), reads.Schema
	if a.readDatabase == "" || cfg.ReadOnly {
		return nil
	}
	primary, err := a.open(ctx)
	if err != nil {
		return err
	}
	cfg.Store, cfg.Reads, cfg.Schema = primary, reads, primary.Schema
	cfg.Database = fmt.Sprintf("%s (pages read from %s)", primary.Shown(), reads.Shown())
	return nil
}

// serveLimits are the limits of the dashboard's connections: at most pool
// of them, named serveApplicationName.
func serveLimits(pool int) limits {
	return limits{pool: pool, application: serveApplicationName}
}

// shownAddress is the URL of the dashboard as the user gave its address,
// with the port it got (":0" picks one); every says that it listens on
// every address. Go listens on every address, IPv6 too, for an empty host
// and for 0.0.0.0 alike, and names that [::], which reads as IPv6 only.
func shownAddress(listen string, bound net.Addr) (u string, every bool) {
	host, _, _ := net.SplitHostPort(listen)
	port := "0"
	if tcp, ok := bound.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	every = host == ""
	if addr, err := netip.ParseAddr(host); err == nil && addr.IsUnspecified() {
		every = true
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return "http://" + net.JoinHostPort(host, port) + "/", every
}

// config reads the flags and the token into a dashboard's configuration.
func (f serveFlags) config() (web.Config, error) {
	cfg := web.Config{ReadOnly: f.readOnly}
	err := f.durations(&cfg)
	if err == nil {
		if cfg.BasePath, err = web.CheckBasePath(f.basePath); err != nil {
			err = usagef("--base-path: %v", err)
		}
	}
	if err == nil {
		cfg.Hosts, err = checkHosts(f.hosts)
	}
	if err == nil {
		cfg.Token, err = readToken(f.tokenFile)
	}
	return cfg, err
}

// durations reads the flags of durations into cfg: each above zero, and
// at least its least (the refresh's: web.MinRefresh).
func (f serveFlags) durations(cfg *web.Config) error {
	for _, d := range []struct {
		flag, value string
		to          *time.Duration
		least       time.Duration
	}{
		{"--expiry", f.expiry, &cfg.Expiry, 0}, {"--refresh", f.refresh, &cfg.Refresh, web.MinRefresh},
		{"--session-max-age", f.sessionMaxAge, &cfg.SessionMaxAge, 0}, {"--session-idle", f.sessionIdle, &cfg.SessionIdle, 0},
		{"--read-timeout", f.readTimeout, &cfg.ReadTimeout, web.MinReadTimeout},
	} {
		var err error
		if *d.to, err = parseDuration(d.flag, d.value); err != nil {
			return err
		}
		switch {
		case *d.to == 0:
			return usagef("%s must be above zero", d.flag)
		case *d.to < d.least:
			return usagef("%s %s: give at least %s", d.flag, d.value, d.least)
		}
	}
	return nil
}

// checkHosts refuses a --host that is not a bare host name or address
// (an optional port aside): a scheme, a path, a space, an empty name.
func checkHosts(hosts []string) ([]string, error) {
	for _, h := range hosts {
		name, port := h, "0"
		if n, p, err := net.SplitHostPort(h); err == nil {
			name, port = n, p
		}
		name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
		_, badPort := strconv.ParseUint(port, 10, 16)
		if name == "" || badPort != nil || strings.ContainsAny(h, "/\\@?# \t\r\n") || strings.ContainsAny(name, "[]") {
			return nil, usagef("--host %q: give a host name such as dashboard.example.com (no scheme, no path)", h)
		}
	}
	return hosts, nil
}

// readToken reads the token from file, else from $TASKCTL_SERVE_TOKEN;
// surrounding white space is dropped.
func readToken(file string) (string, error) {
	token := os.Getenv(serveTokenEnv)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return "", usagef("--token-file %s is empty", file)
		}
	}
	token = strings.TrimSpace(token)
	if token != "" && len(token) < minTokenLength {
		return "", usagef("the token is %d bytes long: give at least %d (openssl rand -hex 32 makes one)", len(token), minTokenLength)
	}
	return token, nil
}

// checkExposure refuses to serve beyond the loopback address without a
// token.
func checkExposure(listen, token string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usagef("--listen %q is not host:port (127.0.0.1:8080): %v", listen, err)
	}
	if token != "" || loopback(host) {
		return nil
	}
	where := host
	if where == "" {
		where = "every address"
	}
	return usagef("--listen %s serves beyond this machine (%s): give a token with --token-file FILE or $%s, or listen on 127.0.0.1",
		listen, where, serveTokenEnv)
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}
