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

// order returns the sides of round i of a comparison run in alternating
// order — A B, B A, A B … — so that neither side always runs first, on a
// colder or a warmer machine: over 3 rounds, A B B A A B.
func order(i int) [2]int {
	if i%2 == 0 {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// alternate runs a and b rounds times each, in alternating order, and
// returns the median round of each (see median).
func (b *bench) alternate(ctx context.Context, scenario string, rounds int, a, c sideRun) (result, result, error) {
	sides := [2]sideRun{a, c}
	var results [2][]result
	for i := range rounds {
		for _, s := range order(i) {
			r, err := b.side(ctx, scenario, sides[s].name, sides[s].run)
			if err != nil {
				return result{}, result{}, err
			}
			results[s] = append(results[s], r)
		}
	}
	return medianRound(results[0]), medianRound(results[1]), nil
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
