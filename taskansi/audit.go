package taskansi

import (
	"context"

	"github.com/taskrepo/taskrepo/internal/auditlog"
	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Auditor[DB] = (*Repository)(nil)

// Record appends entry to the audit log (task_audit) and returns it with
// its ID and the database's time.
func (r *Repository) Record(ctx context.Context, db DB, entry taskapi.AuditEntry) (taskapi.AuditEntry, error) {
	if err := check.AuditEntry(entry); err != nil {
		return taskapi.AuditEntry{}, wrapf(err, "record %s in the audit log", entry.Action)
	}
	err := r.retrying(ctx, db, func(db DB) error {
		return r.sealed(ctx, db, func(db DB) error { return r.record(ctx, db, &entry) })
	})
	if err != nil {
		return taskapi.AuditEntry{}, wrapf(err, "record %s in the audit log", entry.Action)
	}
	return entry, nil
}

// record inserts entry and reads back its id and time: in the statement
// where the database returns them, else by the driver's last id, in the
// same transaction (MySQL).
func (r *Repository) record(ctx context.Context, db DB, entry *taskapi.AuditEntry) error {
	args := r.args(now{}, entry.Actor, entry.Origin, entry.Action, entry.Params, entry.Bound, entry.Changed, entry.Outcome)
	if r.dialect.returning {
		return db.QueryRowContext(ctx, r.auditSQL(auditlog.Insert+auditlog.Returning), args...).
			Scan(&entry.ID, utcTime{&entry.At})
	}
	res, err := db.ExecContext(ctx, r.auditSQL(auditlog.Insert), args...)
	if err != nil {
		return err
	}
	if entry.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	return db.QueryRowContext(ctx, r.auditSQL(auditlog.At), entry.ID).Scan(utcTime{&entry.At})
}

// AuditLog returns up to limit entries of the audit log with an ID below
// before (every entry for zero), newest first.
func (r *Repository) AuditLog(ctx context.Context, db DB, before int64, limit int) ([]taskapi.AuditEntry, error) {
	if run, err := check.AuditPage(before, limit); !run {
		return nil, wrapf(err, "read the audit log")
	}
	rows, err := db.QueryContext(ctx, r.auditSQL(auditlog.Page), auditlog.Cursor(before), limit)
	if err != nil {
		return nil, wrapf(err, "read the audit log")
	}
	var entries []taskapi.AuditEntry
	err = forEachRow(rows, func(scan func(...any) error) error {
		var e taskapi.AuditEntry
		err := scan(&e.ID, utcTime{&e.At}, &e.Actor, &e.Origin, &e.Action, &e.Params, &e.Bound, &e.Changed, &e.Outcome)
		entries = append(entries, e)
		return err
	})
	if err != nil {
		return nil, wrapf(err, "read the audit log")
	}
	return entries, nil
}

// auditSQL fills the table and the dialect's moment into a statement of
// the audit log and numbers its placeholders.
func (r *Repository) auditSQL(query string) string {
	return r.expand(query, "{audit}", r.qualified("task_audit"), "{now}", r.dialect.now)
}
