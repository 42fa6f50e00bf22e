package main

import (
	"context"
	"slices"

	"github.com/taskrepo/taskrepo/taskapi"
)

// lookupGap is how far apart two sequences may lie and still be read in
// one page: a page of tasks chosen on a topic's page holds runs of close
// sequences, read with one statement instead of one per task; a page
// reads at most lookupGap times as many tasks as it finds.
const lookupGap = 16

// Lookups reads the tasks of topic with the given sequences in one
// transaction, each cluster of close sequences with one page: a hundred
// chosen tasks cost a statement or a few, not a hundred transactions. A
// sequence with no task is left out of the map.
func (b *backend[Tx]) Lookups(ctx context.Context, topic string, sequences []int64) (map[int64]taskapi.Info, error) {
	return in(ctx, b, func(tx Tx) (map[int64]taskapi.Info, error) {
		wanted := make(map[int64]bool, len(sequences))
		for _, seq := range sequences {
			wanted[seq] = true
		}
		found := make(map[int64]taskapi.Info, len(sequences))
		for _, c := range clusters(sequences) {
			infos, err := b.repo.Page(ctx, tx, topic, taskapi.Listing{}, c.From-1, int(c.To-c.From+1), taskapi.Forward)
			if err != nil {
				return nil, err
			}
			for _, info := range infos {
				if wanted[info.Sequence] {
					found[info.Sequence] = info
				}
			}
		}
		return found, nil
	})
}

// clusters cuts the sorted sequences into ranges whose neighbours lie at
// most lookupGap apart.
func clusters(sequences []int64) []taskapi.Range {
	sorted := slices.Clone(sequences)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var out []taskapi.Range
	for _, seq := range sorted {
		if seq <= taskapi.Inception {
			continue
		}
		if n := len(out); n > 0 && seq-out[n-1].To <= lookupGap {
			out[n-1].To = seq
			continue
		}
		out = append(out, taskapi.Range{From: seq, To: seq})
	}
	return out
}
