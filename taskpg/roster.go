package taskpg

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Roster[DB] = (*Repository)(nil)

// The roster's statements: every registered owner with its heartbeat; the
// topics in which registered owners polled (task_hold); and, a few dozen
// topics at a time, the Active tasks per owner of those topics, counted on
// the partial index task_active (owner, where state = 0) of each partition.
const (
	rosterOwners = `SELECT owner, heartbeat FROM {schema}.task_owner`
	rosterTopics = `
SELECT DISTINCT h.topic FROM {schema}.task_hold AS h
WHERE EXISTS (SELECT FROM {schema}.task_owner AS o WHERE o.owner = h.owner)`
	rosterHeld = `
SELECT topic, owner, count(*) FROM {schema}.task
WHERE topic = ANY ($1::text[]) AND state = 0 AND owner IS NOT NULL
GROUP BY topic, owner`
)

// Roster returns every registered owner, this one included, sorted by name,
// with its heartbeat and its Active tasks per topic.
func (r *Repository) Roster(ctx context.Context, db DB) ([]taskapi.OwnerStatus, error) {
	roster, err := r.roster(ctx, db)
	if err != nil {
		return nil, wrapf(err, "read the roster of owners")
	}
	return roster, nil
}

func (r *Repository) roster(ctx context.Context, db DB) ([]taskapi.OwnerStatus, error) {
	rows, _ := db.Query(ctx, r.rosterSQL(rosterOwners))
	roster, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (taskapi.OwnerStatus, error) {
		var s taskapi.OwnerStatus
		err := row.Scan(&s.Owner, &s.Heartbeat)
		s.Heartbeat = utc(s.Heartbeat)
		return s, err
	})
	if err != nil {
		return nil, err
	}
	batch.SortRoster(roster)
	rows, _ = db.Query(ctx, r.rosterSQL(rosterTopics))
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	slices.Sort(topics)
	var (
		topic, owner string
		n            int64
	)
	err = readChunks(ctx, db, topics, func(db DB, chunk []string) error {
		rows, _ := query(ctx, db, r.rosterSQL(rosterHeld), chunk)
		_, err := pgx.ForEachRow(rows, []any{&topic, &owner, &n}, func() error {
			batch.Hold(roster, owner, topic, n)
			return nil
		})
		return err
	})
	return roster, err
}

// rosterSQL fills the schema into a statement of the roster; these few
// statements are not built in New.
func (r *Repository) rosterSQL(sql string) string {
	return strings.ReplaceAll(sql, "{schema}", r.schema)
}
