package main

import (
	"io"
	"reflect"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// TestClusters: close sequences share a range, far ones get their own,
// duplicates and sequences at or below Inception are dropped.
func TestClusters(t *testing.T) {
	got := clusters([]int64{40, 3, 1, 2, 3, 200, 17, 0, -5})
	want := []taskapi.Range{{From: 1, To: 17}, {From: 40, To: 40}, {From: 200, To: 200}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clusters = %v, want %v", got, want)
	}
}

// TestLookups reads chosen tasks, close and far apart, and a sequence
// with no task, on SQLite and PostgreSQL: each found task once, as
// Lookup reads it, the missing one left out.
func TestLookups(t *testing.T) {
	for _, b := range backends(false) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, err := (&app{database: b.url(t), stdout: io.Discard, stderr: io.Discard}).open(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tasks := seedDashboard(t, s, "orders")
			seqs := []int64{tasks[0].Sequence, tasks[2].Sequence, tasks[19].Sequence, tasks[2].Sequence, tasks[19].Sequence + 1000}
			found, err := s.Lookups(t.Context(), "orders", seqs)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 3 {
				t.Errorf("Lookups found %d tasks, want 3: %v", len(found), found)
			}
			for _, seq := range seqs[:3] {
				info, ok, err := s.Lookup(t.Context(), "orders", seq)
				if err != nil || !ok || !reflect.DeepEqual(found[seq], info) {
					t.Errorf("Lookups[%d] = %+v, want %+v (%v)", seq, found[seq], info, err)
				}
			}
		})
	}
}
