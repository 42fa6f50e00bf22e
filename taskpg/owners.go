package taskpg

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// Register registers this owner with a fresh heartbeat and reports whether it
// was newly registered. When another repository registered the owner's name
// last (the same process started again, say), the Active tasks held under the
// name are first made Expired, so that they can be revived at once.
func (r *Repository) Register(ctx context.Context, db DB) (bool, error) {
	var inserted bool
	_, err := retrying(ctx, db, func() (struct{}, error) {
		return struct{}{}, spanning(ctx, db, func(db DB) (err error) {
			inserted, err = r.register(ctx, db)
			return err
		})
	})
	if err != nil {
		return false, wrapf(err, "register owner %q", r.owner)
	}
	return inserted, nil
}

func (r *Repository) register(ctx context.Context, db DB) (bool, error) {
	var prior string
	err := db.QueryRow(ctx, r.q.priorIncarnation, r.owner).Scan(&prior)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return false, err
	case prior != r.incarnation:
		if err := r.expireEarlierLife(ctx, db); err != nil {
			return false, err
		}
	}
	var inserted bool
	err = sealed(ctx, db, func(db DB) error {
		return db.QueryRow(ctx, r.q.register, r.owner, r.incarnation).Scan(&inserted, &prior)
	})
	return inserted, err
}

// expireEarlierLife makes the Active tasks held under this owner's name
// Expired, in the topics where it holds tasks, a few dozen at a time.
func (r *Repository) expireEarlierLife(ctx context.Context, db DB) error {
	rows, _ := db.Query(ctx, r.q.ownHolds, r.owner)
	topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, chunk := range chunks(topics) {
		if _, err := exec(ctx, db, r.q.expireOwn, chunk, r.owner); err != nil {
			return err
		}
	}
	return nil
}

// Heartbeat refreshes this owner's heartbeat.
func (r *Repository) Heartbeat(ctx context.Context, db DB) error {
	_, err := retrying(ctx, db, func() (struct{}, error) {
		tag, err := exec(ctx, db, r.q.heartbeat, r.owner)
		if err == nil && tag.RowsAffected() == 0 {
			err = taskapi.ErrUnknownOwner
		}
		return struct{}{}, err
	})
	if err != nil {
		return wrapf(err, "heartbeat of owner %q", r.owner)
	}
	return nil
}

// Owners lists the other owners with a heartbeat within the last duration,
// sorted.
func (r *Repository) Owners(ctx context.Context, db DB, within time.Duration) ([]string, error) {
	if err := check.Duration("within", within); err != nil {
		return nil, wrapf(err, "list owners")
	}
	rows, _ := db.Query(ctx, r.q.owners, r.owner, within.Microseconds())
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, wrapf(err, "list owners")
	}
	slices.Sort(names)
	return names, nil
}

// Expire marks the Active tasks of other owners silent for longer than after
// Expired and returns how many. It visits only the topics in which silent
// owners hold tasks, a few dozen at a time: on a pool each such step is a
// transaction of its own.
func (r *Repository) Expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	n, err := r.expire(ctx, db, after)
	if err != nil {
		return 0, wrapf(err, "expire tasks")
	}
	return n, nil
}

func (r *Repository) expire(ctx context.Context, db DB, after time.Duration) (int64, error) {
	holders, err := r.holders(ctx, db, r.q.silentHolds, after)
	if err != nil {
		return 0, err
	}
	return writeChunks(ctx, db, slices.Sorted(maps.Keys(holders)),
		func(db DB, chunk []string) (int64, error) {
			owners := map[string]bool{}
			for _, topic := range chunk {
				for _, owner := range holders[topic] {
					owners[owner] = true
				}
			}
			tag, err := exec(ctx, db, r.q.expire, r.owner, after.Microseconds(), chunk, slices.Sorted(maps.Keys(owners)))
			return tag.RowsAffected(), err
		})
}

// holders runs query, which lists pairs of owner and topic, and returns the
// owners by topic.
func (r *Repository) holders(ctx context.Context, db DB, query string, after time.Duration) (map[string][]string, error) {
	rows, _ := db.Query(ctx, query, r.owner, after.Microseconds())
	byTopic := map[string][]string{}
	var owner, topic string
	_, err := pgx.ForEachRow(rows, []any{&owner, &topic}, func() error {
		byTopic[topic] = append(byTopic[topic], owner)
		return nil
	})
	return byTopic, err
}

// PurgeOwners deletes the other owners silent for longer than after that hold
// no Active task, and returns how many. It looks for Active tasks in the
// topics where the silent owners hold tasks only.
func (r *Repository) PurgeOwners(ctx context.Context, db DB, after time.Duration) (int64, error) {
	if err := check.Duration("after", after); err != nil {
		return 0, wrapf(err, "purge owners")
	}
	n, err := retrying(ctx, db, func() (int64, error) { return r.purgeOwners(ctx, db, after) })
	if err != nil {
		return 0, wrapf(err, "purge owners")
	}
	return n, nil
}

func (r *Repository) purgeOwners(ctx context.Context, db DB, after time.Duration) (int64, error) {
	rows, _ := db.Query(ctx, r.q.silentOwners, r.owner, after.Microseconds())
	held := map[string][]string{} // silent owners by topic
	free := map[string]bool{}     // silent owners
	var (
		owner  string
		topics []string
	)
	_, err := pgx.ForEachRow(rows, []any{&owner, &topics}, func() error {
		free[owner] = true
		for _, topic := range topics {
			held[topic] = append(held[topic], owner)
		}
		return nil
	})
	if err != nil || len(free) == 0 {
		return 0, err
	}
	err = readChunks(ctx, db, slices.Sorted(maps.Keys(held)), func(db DB, chunk []string) error {
		var candidates []string
		for _, topic := range chunk {
			candidates = append(candidates, held[topic]...)
		}
		rows, _ := query(ctx, db, r.q.activeOwners, chunk, candidates)
		_, err := pgx.ForEachRow(rows, []any{&owner}, func() error {
			delete(free, owner)
			return nil
		})
		return err
	})
	if err != nil || len(free) == 0 {
		return 0, err
	}
	var n int64
	err = sealed(ctx, db, func(db DB) error {
		return db.QueryRow(ctx, r.q.purgeOwners, r.owner, after.Microseconds(), slices.Sorted(maps.Keys(free))).Scan(&n)
	})
	return n, err
}
