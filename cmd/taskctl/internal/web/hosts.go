package web

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// DNS rebinding: a page of another site, under a host name whose DNS its
// owner points at 127.0.0.1 once the page is loaded, reads this server's
// pages as its own origin (same-origin: the CSRF values in them, and the
// session cookie the server sets for that name) and POSTs actions. The
// Host header of such requests names the foreign host, so the server
// answers only the host names it knows: the loopback ones, which no one
// else's DNS decides, and those given with --host.

// checksHosts says whether the Host of requests is checked: always
// without a token, where nothing else tells the operator's browser from
// a rebound page; with a token only when Hosts names some, since the
// token authenticates, and a rebound page has neither the token nor the
// session cookie (kept by the browser for the name it was set under).
func (s *Server) checksHosts() bool { return s.cfg.Token == "" || len(s.cfg.Hosts) > 0 }

// hostAllowed says whether host, a Host header with or without a port,
// names this server: a loopback name or one of Hosts (case aside).
func (s *Server) hostAllowed(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" {
		return true
	}
	if addr, err := netip.ParseAddr(name); err == nil && addr.Zone() == "" && addr.Unmap().IsLoopback() {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(hostName(h), name) {
			return true
		}
	}
	return false
}

// hostName is host without its port and brackets, in lower case.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.ToLower(host)
}

// checkHost refuses with 421 Misdirected Request, before anything else is
// done (no session, no page, no action), a request whose Host this server
// does not answer to.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if !s.checksHosts() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.hostAllowed(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		s.fail(w, r, &httpError{status: http.StatusMisdirectedRequest, msg: fmt.Sprintf(
			"this dashboard answers to localhost, 127.0.0.1 and [::1]%s, not to the host %q: a page under another name "+
				"that resolves to this machine could otherwise read it and act (DNS rebinding). Nothing was changed. "+
				"To serve it under that name, start taskctl serve with --host %s.",
			s.namedHosts(), r.Host, hostName(r.Host))})
	})
}

// namedHosts lists Hosts for a message: ", and a, b" or nothing.
func (s *Server) namedHosts() string {
	if len(s.cfg.Hosts) == 0 {
		return ""
	}
	return " (and " + strings.Join(s.cfg.Hosts, ", ") + ", given with --host)"
}
