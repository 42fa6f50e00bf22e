package taskpg

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/auditlog"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Auditor[DB] = (*Repository)(nil)

// auditNow is the moment of the statement in UTC, as stored.
const auditNow = `(statement_timestamp() AT TIME ZONE 'utc')`

// Record appends entry to the audit log (task_audit) and returns it with
// its ID and the database's time.
func (r *Repository) Record(ctx context.Context, db DB, entry taskapi.AuditEntry) (taskapi.AuditEntry, error) {
	if err := check.AuditEntry(entry); err != nil {
		return taskapi.AuditEntry{}, wrapf(err, "record %s in the audit log", entry.Action)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		return struct{}{}, sealed(ctx, db, func(db DB) error {
			return db.QueryRow(ctx, r.auditSQL(auditlog.Insert+auditlog.Returning),
				entry.Actor, entry.Origin, entry.Action, entry.Params, entry.Bound, entry.Changed, entry.Outcome).
				Scan(&entry.ID, &entry.At)
		})
	})
	if err != nil {
		return taskapi.AuditEntry{}, wrapf(err, "record %s in the audit log", entry.Action)
	}
	entry.At = utc(entry.At)
	return entry, nil
}

// AuditLog returns up to limit entries of the audit log with an ID below
// before (every entry for zero), newest first.
func (r *Repository) AuditLog(ctx context.Context, db DB, before int64, limit int) ([]taskapi.AuditEntry, error) {
	if run, err := check.AuditPage(before, limit); !run {
		return nil, wrapf(err, "read the audit log")
	}
	rows, _ := db.Query(ctx, r.auditSQL(auditlog.Page), auditlog.Cursor(before), limit)
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (taskapi.AuditEntry, error) {
		var e taskapi.AuditEntry
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Origin, &e.Action, &e.Params, &e.Bound, &e.Changed, &e.Outcome)
		e.At = utc(e.At)
		return e, err
	})
	if err != nil {
		return nil, wrapf(err, "read the audit log")
	}
	return entries, nil
}

// auditSQL fills the schema's table and the moment into a statement of
// the audit log and numbers its placeholders; these few statements are
// not built in New.
func (r *Repository) auditSQL(query string) string {
	return auditlog.Numbered(strings.NewReplacer("{audit}", r.schema+".task_audit", "{now}", auditNow).Replace(query))
}
