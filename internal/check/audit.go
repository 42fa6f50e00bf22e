package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// AuditEntry checks an entry of the audit log before it is recorded:
// actor, origin and action named within their limits, free text without
// NUL bytes or invalid UTF-8, params a JSON object or nothing, and a
// count that is not negative.
func AuditEntry(e taskapi.AuditEntry) error {
	for _, n := range []struct {
		kind, value string
		limit       int
	}{
		{"audit actor", e.Actor, taskapi.MaxActorLength},
		{"audit origin", e.Origin, taskapi.MaxOriginLength},
		{"audit action", e.Action, taskapi.MaxActionLength},
	} {
		if err := name(n.kind, n.value, n.limit); err != nil {
			return err
		}
	}
	for _, t := range [][2]string{{"audit params", e.Params}, {"audit bound", e.Bound}, {"audit outcome", e.Outcome}} {
		if err := Text(t[0], t[1]); err != nil {
			return err
		}
	}
	if e.Params != "" && !jsonObject(e.Params) {
		return fmt.Errorf("audit params %q are not a JSON object: %w", Short(e.Params), taskapi.ErrInvalidArgument)
	}
	if e.Changed < 0 {
		return fmt.Errorf("audit count %d is negative: %w", e.Changed, taskapi.ErrInvalidArgument)
	}
	return nil
}

// jsonObject says whether text is one JSON object.
func jsonObject(text string) bool {
	var v map[string]any
	return strings.HasPrefix(strings.TrimSpace(text), "{") && json.Unmarshal([]byte(text), &v) == nil
}

// AuditPage checks the arguments of a read of the audit log — a cursor
// that is not negative and at most taskapi.MaxAuditPage entries — and
// reports whether limit asks for an entry.
func AuditPage(before int64, limit int) (bool, error) {
	if before < 0 {
		return false, fmt.Errorf("audit cursor %d is negative: %w", before, taskapi.ErrInvalidArgument)
	}
	if limit > taskapi.MaxAuditPage {
		return false, fmt.Errorf("audit page of %d entries is over the limit of %d: %w", limit, taskapi.MaxAuditPage, taskapi.ErrInvalidArgument)
	}
	return limit > 0, nil
}
