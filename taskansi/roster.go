package taskansi

import (
	"context"
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/internal/batch"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Roster[DB] = (*Repository)(nil)

// The roster's statements: every registered owner with its heartbeat, and
// the Active tasks per owner and topic, counted on the index task_active
// (owner where state = 0 on SQLite and PostgreSQL, (state, owner) on
// MySQL). On PostgreSQL, where a statement locks each partition it reads,
// the Active tasks are counted in the topics in which registered owners
// polled (task_hold), a few dozen topics at a time ({topicFilter}).
const (
	rosterOwners = `SELECT owner, heartbeat FROM {owner}`
	rosterTopics = `
SELECT DISTINCT h.topic FROM {hold} AS h
WHERE EXISTS (SELECT 1 FROM {owner} AS o WHERE o.owner = h.owner)`
	rosterHeld = `
SELECT topic, owner, COUNT(*) FROM {task}
WHERE state = 0 AND owner IS NOT NULL{topicFilter}
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
	rows, err := db.QueryContext(ctx, r.rosterSQL(rosterOwners))
	if err != nil {
		return nil, err
	}
	var roster []taskapi.OwnerStatus
	err = forEachRow(rows, func(scan func(...any) error) error {
		var s taskapi.OwnerStatus
		err := scan(&s.Owner, utcTime{&s.Heartbeat})
		roster = append(roster, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	batch.SortRoster(roster)
	if !r.dialect.partitioned { // one statement over the index
		return roster, r.rosterHeld(ctx, db, roster, nil)
	}
	topics, err := queryStrings(ctx, db, r.rosterSQL(rosterTopics))
	if err != nil {
		return nil, err
	}
	slices.Sort(topics)
	return roster, r.readChunks(ctx, db, topics, func(db DB, chunk []string) error {
		return r.rosterHeld(ctx, db, roster, chunk)
	})
}

// rosterHeld counts the Active tasks of the topics of chunk (every topic
// for none) into roster.
func (r *Repository) rosterHeld(ctx context.Context, db DB, roster []taskapi.OwnerStatus, chunk []string) error {
	filter, args := topicFilter(chunk)
	rows, err := db.QueryContext(ctx, r.rosterSQL(rosterHeld, "{topicFilter}", filter), args...)
	if err != nil {
		return err
	}
	return forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic, owner string
			n            int64
		)
		err := scan(&topic, &owner, &n)
		batch.Hold(roster, owner, topic, n)
		return err
	})
}

// rosterSQL fills the tables (and pairs) into a statement of the roster;
// these few statements are not built in New.
func (r *Repository) rosterSQL(query string, pairs ...string) string {
	tables := strings.NewReplacer(append(pairs, "{owner}", r.qualified("task_owner"),
		"{hold}", r.qualified("task_hold"), "{task}", r.qualified("task"))...)
	return r.fleetSQL(tables.Replace(query))
}
