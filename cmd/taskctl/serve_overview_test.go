package main

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/web"
)

// overviewTopics are the topics the overview lists, in its order.
func overviewTopics(t *testing.T, page string) []string {
	t.Helper()
	_, table, _ := strings.Cut(page, `<table class="topics">`)
	var topics []string
	for _, m := range regexp.MustCompile(`<a href="/topic\?topic=([^"&]*)"`).FindAllStringSubmatch(table, -1) {
		topic, err := url.QueryUnescape(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err != nil {
			t.Fatal(err)
		}
		topics = append(topics, topic)
	}
	return topics
}

// TestServeListsTopicsByName lists topics whose byte order is not the
// order a person reads: the overview lists them by name, case aside, and
// numbers by their value.
func TestServeListsTopicsByName(t *testing.T) {
	d := startDashboard(t, sqliteURL(t), web.Config{Refresh: 100 * time.Millisecond})
	want := []string{"alpha", "Beta", "orders-2", "orders-10", "orders-10b", "Orders-11", "zeta"}
	for _, topic := range []string{"orders-10", "zeta", "Orders-11", "orders-2", "Beta", "orders-10b", "alpha"} {
		if _, err := d.store.Initialize(t.Context(), topic); err != nil {
			t.Fatal(err)
		}
	}
	br := newBrowser(t, d.url)
	var got []string
	waitFor(t, "the overview lists every topic", func() bool {
		got = overviewTopics(t, br.page("/"))
		return len(got) == len(want)
	})
	if !slices.Equal(got, want) {
		t.Errorf("the overview lists %q, want %q", got, want)
	}
}
