package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Every action is recorded in the database's audit log (taskapi.Auditor)
// once it ran, in one place: doHandler calls recordAction. Reads record
// nothing.

// auditOrigin is the origin of the dashboard's entries.
const auditOrigin = "dashboard"

// localActor is who acts on a dashboard without a token: whoever can
// reach its loopback address.
const localActor = "local"

// maxLabel bounds the name an operator gives at login.
const maxLabel = 64

// boundKeys are the form values that bound what an action changes: the
// range of sequences, the creation time, and the confirmed bound of the
// highest sequence seen and the time of the confirmation. They are
// recorded as the entry's bound, besides every value in its parameters.
var boundKeys = []string{"seq", "from", "to", "before", "seen", "settled", "bound", "upto", "confirmed"}

// auditWrite bounds how long recording an action may take: the action
// has happened by then, and its page must answer.
const auditWrite = 5 * time.Second

// actor says who acts in r: the name given at login, else the token's
// fingerprint (any holder of the token), or "local" without a token.
func (s *Server) actor(r *http.Request) string {
	if s.cfg.Token == "" {
		return localActor
	}
	id, _ := sessionOf(r)
	if id != bearerSession {
		if label := s.sessions.labelOf(id); label != "" {
			return label
		}
	}
	sum := sha256.Sum256([]byte(s.cfg.Token))
	return "token " + hex.EncodeToString(sum[:4])
}

// checkLabel says what is wrong with a name given at login, "" when
// nothing is: at most maxLabel bytes of printable text, with no hidden
// character that would make the audit log lie about who acted.
func checkLabel(name string) string {
	name = strings.TrimSpace(name)
	switch {
	case len(name) > maxLabel:
		return fmt.Sprintf("The name is %d bytes long: give at most %d.", len(name), maxLabel)
	case !utf8.ValidString(name):
		return "The name is not valid UTF-8."
	case strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' || hiddenRune(r) }):
		return "The name holds control, invisible or bidirectional characters: give plain text."
	}
	return ""
}

// recordAction records an action that ran: who, what (the values of the
// POST), the bound among them, what it changed and said, and its error
// when it stopped on one after it changed something. An action that the
// database refused for a privilege is recorded as denied, since who tried
// what matters there; any other action that failed having changed nothing
// records nothing, as bad input changes nothing. The action stands
// whatever becomes of the record; a record that fails is logged and said
// on the result page (o.AuditFailure) or the error page: recordAction
// returns what to say then, "" when the record was written or none was due.
func (s *Server) recordAction(r *http.Request, name string, p *plan, o *outcome, runErr error) string {
	denied := errors.Is(runErr, taskapi.ErrPermission)
	if runErr != nil && (o == nil || o.Changed == 0) && !denied {
		return ""
	}
	entry := taskapi.AuditEntry{Actor: s.actor(r), Origin: auditOrigin, Action: name,
		Params: auditParams(p.Hidden), Bound: auditBound(p.Hidden)}
	if o != nil {
		entry.Changed, entry.Outcome = o.Changed, strings.Join(o.Lines, " ")
	}
	switch {
	case denied && entry.Changed == 0:
		entry.Outcome = "denied: " + runErr.Error()
	case runErr != nil:
		entry.Outcome = strings.TrimSpace(entry.Outcome + " failed: " + runErr.Error())
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditWrite)
	defer cancel()
	if _, err := s.cfg.Store.Record(ctx, entry); err != nil {
		s.log.Printf("audit record of %s by %q failed: %v", name, entry.Actor, err)
		if runErr != nil && entry.Changed == 0 {
			return fmt.Sprintf("Its audit record failed too: %v", err)
		}
		failure := fmt.Sprintf("The change above stands, but its audit record failed: %v", err)
		if o != nil {
			o.AuditFailure = failure
		}
		return failure
	}
	return ""
}

// auditParams writes the values of an action's form as a JSON object.
func auditParams(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil { // url.Values always marshals
		return ""
	}
	return string(b)
}

// auditBound writes the values of boundKeys that an action's form holds,
// such as "from=10 to=42"; "" when it has none.
func auditBound(v url.Values) string {
	var parts []string
	for _, k := range boundKeys {
		if values, ok := v[k]; ok {
			parts = append(parts, k+"="+strings.Join(values, ","))
		}
	}
	return strings.Join(parts, " ")
}
