package taskpg

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Activator[DB] = (*Repository)(nil)

// ActivationChannel returns the channel of PostgreSQL's LISTEN/NOTIFY on
// which SetActivation notifies, with the topic as payload, for the tables of
// schema: "taskrepo_activation" for "public", "taskrepo_activation_" +
// schema otherwise, a name over PostgreSQL's 63 bytes keeping a prefix of
// the schema and ending with a hash of the whole (the rule of
// TasksChannel). taskansi notifies the same channel.
func ActivationChannel(schema string) string { return activationChannel(schema) }

// activationUpsert stores the activation of a registered topic. The topic's row
// is locked against a concurrent Destroy (FOR KEY SHARE) while the row of
// its activation is written, and the same statement notifies
// ActivationChannel with the topic: the notification is delivered when the
// call's transaction commits, and not at all when it rolls back.
const activationUpsert = `
WITH stored AS (
    INSERT INTO {schema}.task_activation AS a (topic, activation, changed)
    SELECT topic, $2::smallint, {now} FROM {schema}.task_topic WHERE topic = $1 FOR KEY SHARE
    ON CONFLICT (topic) DO UPDATE SET activation = EXCLUDED.activation, changed = EXCLUDED.changed
    RETURNING a.topic)
SELECT count(pg_notify($3, topic)) FROM stored`

// activationRows reads every stored activation; a destroyed topic's row went
// with it (ON DELETE CASCADE).
const activationRows = `SELECT topic, activation FROM {schema}.task_activation`

// SetActivation stores the activation of topic and notifies
// ActivationChannel of the repository's schema with the topic when the
// caller's transaction commits. ErrUnknownTopic when topic is not
// registered.
func (r *Repository) SetActivation(ctx context.Context, db DB, topic string, activation taskapi.Activation) error {
	if err := check.Activation(topic, activation); err != nil {
		return wrapf(err, "set activation of %q to %v", topic, activation)
	}
	_, err := retrying(ctx, db, func() (struct{}, error) {
		var stored int64
		err := sealed(ctx, db, func(db DB) error {
			return db.QueryRow(ctx, r.fleetSQL(activationUpsert), topic, int16(activation), ActivationChannel(r.plain)).Scan(&stored)
		})
		if err == nil && stored == 0 {
			err = unregistered(topic)
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "set activation of %q to %v", topic, activation)
	}
	return nil
}

// Activations returns the stored activation of every registered topic that
// has one; a topic that has none runs.
func (r *Repository) Activations(ctx context.Context, db DB) (map[string]taskapi.Activation, error) {
	rows, _ := db.Query(ctx, r.fleetSQL(activationRows))
	stored := map[string]taskapi.Activation{}
	var (
		topic      string
		activation int16
	)
	_, err := pgx.ForEachRow(rows, []any{&topic, &activation}, func() error {
		stored[topic] = taskapi.Activation(activation)
		return nil
	})
	if err != nil {
		return nil, wrapf(err, "read activations")
	}
	return stored, nil
}

// fleetSQL fills the placeholders of a statement on the tables that control
// consumers (task_activation, task_leader): the schema and the moment of the
// statement. These statements are few and small; they are not built in New.
func (r *Repository) fleetSQL(sql string) string {
	return strings.NewReplacer("{schema}", r.schema, "{now}", now).Replace(sql)
}
