package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// healthReport is the body of /healthz. It names no topic, task or
// figure: the endpoint answers without a session, and under any Host.
type healthReport struct {
	// Status is "ok" when the dashboard can serve: the database answers
	// (the one the pages read from too, when it is another) and its
	// schema is not older than this taskctl's; "failing" otherwise.
	Status       string `json:"status"`
	Database     string `json:"database"`                // "answers" or "does not answer"
	ReadDatabase string `json:"read_database,omitempty"` // likewise, with --read-database
	// Migrations says whether the schema is the one this taskctl brings:
	// "current", "behind: …" (run taskctl migrate) or "ahead: …" (this
	// taskctl is older than the schema, which it still serves).
	Migrations string `json:"migrations,omitempty"`
	Schema     int64  `json:"schema_version,omitempty"`
	Latest     int64  `json:"latest_version,omitempty"`
}

// healthFresh is how long a report of /healthz is served again: the
// endpoint needs no session, and a flood of requests may not take the
// connections of the pages, at most a reading a second.
const healthFresh = time.Second

// healthCache keeps the last report of /healthz.
type healthCache struct {
	mu     sync.Mutex
	at     time.Time
	report healthReport
}

// healthz answers GET /healthz for a load balancer or an orchestrator's
// probe: 200 when the report's status is ok, 503 when it is failing. The
// report is read within the read timeout of a page, and served again for
// healthFresh (the requests meanwhile wait for the reading under way).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.health.mu.Lock()
	if time.Since(s.health.at) >= healthFresh {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.ReadTimeout)
		s.health.report, s.health.at = s.readHealth(ctx), time.Now()
		cancel()
	}
	h := s.health.report
	s.health.mu.Unlock()
	status := http.StatusOK
	if h.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(h)
}

// readHealth reads the report of /healthz. The database's answer is the
// read of its schema version (Config.Schema), or of its clock without
// one; the failure itself goes to the log only.
func (s *Server) readHealth(ctx context.Context) healthReport {
	h := healthReport{Status: "ok", Database: "answers"}
	answers := func(what string, err error) string {
		if err == nil {
			return "answers"
		}
		s.log.Printf("/healthz: %s: %v", what, err)
		h.Status = "failing"
		return "does not answer"
	}
	if s.cfg.Schema == nil {
		_, err := s.cfg.Store.Now(ctx)
		h.Database = answers("database", err)
	} else {
		current, latest, err := s.cfg.Schema(ctx)
		if h.Database = answers("database", err); err == nil {
			h.Schema, h.Latest, h.Migrations = current, latest, migrationsOf(current, latest)
			if current < latest {
				h.Status = "failing"
			}
		}
	}
	if s.cfg.Reads != s.cfg.Store {
		_, err := s.cfg.Reads.Now(ctx)
		h.ReadDatabase = answers("read database", err)
	}
	return h
}

// migrationsOf says how the schema's version stands to this taskctl's.
func migrationsOf(current, latest int64) string {
	switch {
	case current == latest:
		return "current"
	case current < latest:
		return fmt.Sprintf("behind: version %d of %d, run taskctl migrate", current, latest)
	}
	return fmt.Sprintf("ahead: version %d, this taskctl knows %d", current, latest)
}
