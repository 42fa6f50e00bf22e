package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"
)

// sideRun is one side of a scenario, run in a fresh database.
type sideRun struct {
	name string
	run  func(pool *pgxpool.Pool) (result, error)
}

// order returns the indexes of n sides in round i of a comparison run, in
// alternating order — A B, B A, A B … (A B C, C B A, …) — so that no side
// always runs first or last, on a colder or a warmer machine: over 3
// rounds of two sides, A B B A A B.
func order(i, n int) []int {
	sides := make([]int, n)
	for s := range sides {
		sides[s] = s
	}
	if i%2 == 1 {
		slices.Reverse(sides)
	}
	return sides
}

// alternate runs every side rounds times, in alternating order, and
// returns the median round of each (see medianRound), in the order of
// sides.
func (b *bench) alternate(ctx context.Context, scenario string, rounds int, sides ...sideRun) ([]result, error) {
	results := make([][]result, len(sides))
	for i := range rounds {
		for _, s := range order(i, len(sides)) {
			r, err := b.side(ctx, scenario, sides[s].name, sides[s].run)
			if err != nil {
				return nil, err
			}
			results[s] = append(results[s], r)
		}
	}
	medians := make([]result, len(sides))
	for s, rs := range results {
		medians[s] = medianRound(rs)
	}
	return medians, nil
}

// medianRound returns the round of the median rate, with its latencies,
// and the median server CPU and WAL per task of all rounds, each taken on
// its own: a round whose rate is the median need not have the median cost.
func medianRound(rs []result) result {
	if len(rs) == 1 {
		return rs[0]
	}
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.rate(), b.rate()) })
	m := rs[len(rs)/2]
	perTask := func(v func(cost) float64) float64 {
		per := make([]float64, 0, len(rs))
		for _, r := range rs {
			if r.tasks > 0 {
				per = append(per, v(r.cost)/float64(r.tasks))
			}
		}
		if len(per) == 0 {
			return 0
		}
		return medianOf(per)
	}
	m.cost.CPUSeconds = perTask(func(c cost) float64 { return c.CPUSeconds }) * float64(m.tasks)
	m.cost.WALBytes = perTask(func(c cost) float64 { return c.WALBytes }) * float64(m.tasks)
	m.note = joinText(m.note, fmt.Sprintf("median of %d rounds in alternating order", len(rs)))
	return m
}

// medianOf returns the median of vs, the middle one of an odd count.
func medianOf(vs []float64) float64 {
	vs = slices.Clone(vs)
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// joinText joins two notes with a semicolon, either may be empty.
func joinText(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
