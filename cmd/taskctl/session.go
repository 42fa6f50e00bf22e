package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/taskrepo/taskrepo/migrations"
)

// open connects to the database that --database names and checks that its
// schema is up to date. The store is closed when the run ends.
func (a *app) open(ctx context.Context) (store, error) {
	return a.connect(ctx, a.database, false)
}

// openReads is open for a command that only reads: on the database that
// --read-database names (a hot standby, say) when it is given, with every
// transaction read-only there.
func (a *app) openReads(ctx context.Context) (store, error) {
	if a.readDatabase == "" {
		return a.open(ctx)
	}
	return a.connect(ctx, a.readDatabase, true)
}

// openTopics is open for a command on topics: each must be named and
// exist, else the error says which is missing.
func (a *app) openTopics(ctx context.Context, topics ...string) (store, error) {
	return a.checkTopics(ctx, a.open, topics)
}

// openReadTopics is openReads for a command that reads topics.
func (a *app) openReadTopics(ctx context.Context, topics ...string) (store, error) {
	return a.checkTopics(ctx, a.openReads, topics)
}

// checkTopics opens a store and checks that every topic is named and
// exists, else the error says which is missing.
func (a *app) checkTopics(ctx context.Context, open func(context.Context) (store, error), topics []string) (store, error) {
	if slices.Contains(topics, "") {
		return nil, usagef("--topic is required")
	}
	s, err := open(ctx)
	if err != nil || len(topics) == 0 {
		return s, err
	}
	known, err := s.Topics(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if !slices.Contains(known, t) {
			return nil, notFoundf("unknown topic %q: 'taskctl topic list' shows the topics, 'taskctl topic init' adds one", t)
		}
	}
	return s, nil
}

// openMigrated connects to the database, creating an SQLite file if need
// be, and brings its schema up to date first (migrate, demo). It returns
// the schema versions before and after.
func (a *app) openMigrated(ctx context.Context) (s store, from, to int64, err error) {
	t, err := parseTarget(a.database)
	if err != nil {
		return nil, 0, 0, err
	}
	c, err := connect(ctx, t, true)
	if err != nil {
		return nil, 0, 0, err
	}
	if from, _, err = c.schemaVersion(ctx); err == nil {
		if err = migrations.Up(ctx, c.db, c.dialect); err != nil {
			err = fmt.Errorf("migrate %s: %w", t.shown, err)
		}
	}
	if err == nil {
		to, _, err = c.schemaVersion(ctx)
	}
	if err == nil {
		s, err = a.keep(c)
	}
	if err != nil {
		c.close()
	}
	return s, from, to, err
}

// connect opens the database that raw names, whose schema must be up to
// date; readOnly makes its transactions read-only.
func (a *app) connect(ctx context.Context, raw string, readOnly bool) (store, error) {
	t, err := parseTarget(raw)
	if err != nil {
		return nil, err
	}
	t.limits = a.limits
	t.readOnly = readOnly
	c, err := connect(ctx, t, false)
	if err != nil {
		return nil, err
	}
	current, latest, err := c.schemaVersion(ctx)
	switch {
	case err != nil:
	case current == 0:
		err = unreachable(fmt.Errorf("%s has no taskrepo schema: run 'taskctl migrate' first", t.shown))
	case current < latest:
		err = unreachable(fmt.Errorf("the schema of %s is at version %d and this taskctl needs %d: run 'taskctl migrate'", t.shown, current, latest))
	}
	var s store
	if err == nil {
		s, err = a.keep(c)
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return s, nil
}

// keep makes the store of c one of the run's stores, closed when the run
// ends.
func (a *app) keep(c *connection) (store, error) {
	s, err := newStore(c)
	if err != nil {
		return nil, err
	}
	a.stores = append(a.stores, s)
	return s, nil
}

// closeStores closes every store the run opened.
func (a *app) closeStores() {
	for _, s := range a.stores {
		s.Close()
	}
}
