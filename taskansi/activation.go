package taskansi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/edge"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Activator[DB] = (*Repository)(nil)

// activationUpsert stores the activation of a registered topic, by dialect:
// the topic's row read in the same statement, so that an unknown topic
// stores nothing. On PostgreSQL the row is locked against a concurrent
// Destroy (FOR KEY SHARE), and the statement notifies the activation
// channel with the topic (delivered at commit, as taskpg does) and counts
// the rows it stored; elsewhere the driver counts them (MySQL counts a row
// that did not change as none). Arguments: the activation, now, the topic,
// and on PostgreSQL the channel.
var activationUpsert = map[string]string{
	"postgres": `
WITH stored AS (
    INSERT INTO {activation} AS a (topic, activation, changed)
    SELECT topic, CAST(? AS smallint), {now} FROM {topic} WHERE topic = ? FOR KEY SHARE
    ON CONFLICT (topic) DO UPDATE SET activation = excluded.activation, changed = excluded.changed
    RETURNING a.topic)
SELECT COUNT(pg_notify(CAST(? AS text), topic)) FROM stored`,
	"sqlite": `
INSERT INTO {activation} (topic, activation, changed)
SELECT topic, ?, {now} FROM {topic} WHERE topic = ?
ON CONFLICT (topic) DO UPDATE SET activation = excluded.activation, changed = excluded.changed`,
	"mysql": `
INSERT INTO {activation} (topic, activation, changed)
SELECT topic, ?, {now} FROM {topic} WHERE topic = ?
ON DUPLICATE KEY UPDATE activation = VALUES(activation), changed = VALUES(changed)`,
}

// activationRows reads every stored activation; a destroyed topic's row went
// with it (a foreign key, or a trigger on SQLite).
const activationRows = `SELECT topic, activation FROM {activation}`

// SetActivation stores the activation of topic; ErrUnknownTopic when topic
// is not registered. On PostgreSQL it notifies the schema's activation
// channel (taskpg.ActivationChannel) with the topic when the caller's
// transaction commits.
func (r *Repository) SetActivation(ctx context.Context, db DB, topic string, activation taskapi.Activation) error {
	if err := check.Activation(topic, activation); err != nil {
		return wrapf(err, "set activation of %q to %v", topic, activation)
	}
	err := r.retrying(ctx, db, func(db DB) error {
		return r.sealed(ctx, db, func(db DB) error {
			stored, err := r.storeActivation(ctx, db, topic, activation)
			err = foreignTopic(err)
			if err == nil && stored == 0 {
				err = r.mustBeKnown(ctx, db, topic)
			}
			return err
		})
	})
	if err != nil {
		return wrapf(err, "set activation of %q to %v", topic, activation)
	}
	return nil
}

// storeActivation runs activationUpsert and returns how many rows it stored.
func (r *Repository) storeActivation(ctx context.Context, db DB, topic string, activation taskapi.Activation) (int64, error) {
	query := r.fleetSQL(activationUpsert[r.dialect.name])
	args := r.args(int(activation), now{}, topic)
	if r.dialect.name != "postgres" {
		return affected(db.ExecContext(ctx, query, args...))
	}
	var stored int64
	err := db.QueryRowContext(ctx, query, append(args, edge.Channel(edge.ActivationBase, r.plain))...).Scan(&stored)
	return stored, err
}

// mustBeKnown returns ErrUnknownTopic unless topic is registered.
func (r *Repository) mustBeKnown(ctx context.Context, db DB, topic string) error {
	var known string
	err := db.QueryRowContext(ctx, r.expand(r.q.knownTopic), topic).Scan(&known)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("topic %q is not registered: %w", check.Short(topic), taskapi.ErrUnknownTopic)
	}
	return err
}

// Activations returns the stored activation of every registered topic that
// has one; a topic that has none runs.
func (r *Repository) Activations(ctx context.Context, db DB) (map[string]taskapi.Activation, error) {
	rows, err := db.QueryContext(ctx, r.fleetSQL(activationRows))
	if err != nil {
		return nil, wrapf(err, "read activations")
	}
	stored := map[string]taskapi.Activation{}
	err = forEachRow(rows, func(scan func(...any) error) error {
		var (
			topic      string
			activation int64
		)
		err := scan(&topic, &activation)
		stored[topic] = taskapi.Activation(activation)
		return err
	})
	if err != nil {
		return nil, wrapf(err, "read activations")
	}
	return stored, nil
}

// laterOf is, by dialect, the moment of the statement plus a duration
// ({later}): a parameter in microseconds, or on SQLite the time itself.
var laterOf = map[string]string{
	"postgres": `({now} + CAST(? AS bigint) * interval '1 microsecond')`,
	"sqlite":   `?`,
	"mysql":    `({now} + INTERVAL ? MICROSECOND)`,
}

// fleetSQL fills the tokens of a statement on the tables that control
// consumers (task_activation, task_leader) and numbers its placeholders:
// {activation}, {leader} and {topic} by the (qualified) tables, {later}
// (see laterOf), {now}, {greatest}, {wait} and {keep} by the dialect's. These statements are
// few and small; they are not built in New.
func (r *Repository) fleetSQL(query string) string {
	qualify := r.qualified
	return r.expand(query, "{activation}", qualify("task_activation"), "{leader}", qualify("task_leader"),
		"{topic}", qualify("task_topic"), "{later}", strings.ReplaceAll(laterOf[r.dialect.name], "{now}", r.dialect.now),
		"{now}", r.dialect.now, "{greatest}", r.dialect.greatest, "{wait}", r.dialect.forUpdate, "{keep}", r.dialect.keep)
}

// qualified returns the name of a table of the repository's schema,
// qualified when a schema was named.
func (r *Repository) qualified(name string) string {
	if r.schema == "" {
		return name
	}
	return r.schema + "." + r.dialect.quoteIdentifier(name)
}
