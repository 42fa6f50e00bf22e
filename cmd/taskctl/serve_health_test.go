package main

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// liveHolder registers owner on the database of s, polls n tasks of topic
// and holds them ACTIVE, and keeps its heartbeat every 100ms until the
// test ends: a live consumer at work.
func liveHolder(t *testing.T, s store, owner, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var beat func() error
	var err error
	switch b := s.(type) {
	case *backend[taskpg.DB]:
		beat, err = holdLive(ctx, b, owner, topic, n)
	case *backend[taskansi.DB]:
		beat, err = holdLive(ctx, b, owner, topic, n)
	default:
		t.Fatalf("no consumer for %T", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := beat(); err != nil && ctx.Err() == nil {
				t.Errorf("heartbeat of %s: %v", owner, err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// holdLive registers owner on b and polls n tasks of topic, and returns what
// sends its heartbeat.
func holdLive[Tx any](ctx context.Context, b *backend[Tx], owner, topic string, n int) (beat func() error, err error) {
	repo, err := b.newRepo(owner)
	if err != nil {
		return nil, err
	}
	if _, err := repo.Register(ctx, b.db); err != nil {
		return nil, err
	}
	err = b.transact(ctx, func(tx Tx) error {
		_, err := repo.Poll(ctx, tx, topic, n)
		return err
	})
	return func() error { return repo.Heartbeat(ctx, b.db) }, err
}

// pushN registers topic and pushes n tasks into it.
func pushN(t *testing.T, s store, topic string, n int) {
	t.Helper()
	if _, err := s.Initialize(t.Context(), topic); err != nil {
		t.Fatal(err)
	}
	creations := make([]taskapi.Creation, n)
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: topic + "-" + string(rune('a'+i))}
	}
	if _, err := s.Push(t.Context(), topic, taskapi.Append, creations); err != nil {
		t.Fatal(err)
	}
}

// flagged returns the topics the overview flags as having no live
// consumer.
func flagged(t *testing.T, page string) []string {
	t.Helper()
	var topics []string
	for _, row := range strings.Split(page, "<tr")[1:] {
		if !strings.Contains(row, `class="cue cue-consumer"`) {
			continue
		}
		if ts := overviewTopics(t, `<table class="topics">`+row); len(ts) == 1 {
			topics = append(topics, ts[0])
		}
	}
	return topics
}

// TestServeFlagsTopicsWithoutALiveConsumer serves topics whose READY tasks
// wait: one that no owner ever polled, one whose only owner went silent,
// one a live owner holds tasks of, and one that is paused. The overview
// and the topic's page flag the first two, and only them.
func TestServeFlagsTopicsWithoutALiveConsumer(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := startDashboard(t, b.url(t), web.Config{Refresh: 100 * time.Millisecond, Expiry: time.Second})
			for _, topic := range []string{"orphaned", "abandoned", "held", "paused"} {
				pushN(t, d.store, topic, 4)
			}
			consumeOn(t, d.store, "gone-worker", "abandoned", 1, false)
			liveHolder(t, d.store, "live-worker", "held", 1)
			if err := d.store.SetActivation(t.Context(), "paused", taskapi.Paused); err != nil {
				t.Fatal(err)
			}
			br := newBrowser(t, d.url)
			var page string
			waitFor(t, "the overview flags orphaned and abandoned", func() bool {
				page = br.page("/")
				got := flagged(t, page)
				return contains(got, "orphaned") && contains(got, "abandoned")
			})
			if got := flagged(t, page); len(got) != 2 {
				t.Errorf("the overview flags %q, want orphaned and abandoned only", got)
			}
			if !strings.Contains(page, `id="attention"`) {
				t.Errorf("the overview does not sum up the topics that need attention")
			}
			for topic, want := range map[string]bool{"orphaned": true, "abandoned": true, "held": false, "paused": false} {
				if got := strings.Contains(br.page("/topic?topic="+url.QueryEscape(topic)), "No live consumer"); got != want {
					t.Errorf("the page of %s says No live consumer: %v, want %v", topic, got, want)
				}
			}
		})
	}
}
