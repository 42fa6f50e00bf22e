package web

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
)

// capacityField is the capacity asked for; the capacity the confirmation
// showed goes back in fromField.
const capacityField = "capacity"

// planCapacity sets or removes the capacity of one topic: topic and
// capacity (a whole number of READY tasks, 0 removing it). Without
// capacity the confirmation asks for it; a topic that has it already
// changes nothing.
func (s *Server) planCapacity(ctx context.Context, f form, preview bool) (*plan, error) {
	return planSetting(ctx, s.cfg.Store, f, preview, topicSetting[int64]{
		title: "Set the capacity", noun: "capacity",
		read: func(ctx context.Context) (map[string]int64, error) { return readyCapacities(ctx, s.cfg.Store) },
		set: func(ctx context.Context, topic string, n int64) error {
			return setReadyCapacity(ctx, s.cfg.Store, topic, n)
		},
		words: capacityWords,
		parse: parseCapacity, choose: capacityChoice,
		put:     func(hidden url.Values, n int64) { hidden[capacityField] = countValues(n) },
		from:    func(n int64) []string { return countValues(n) },
		decode:  decodeCapacity,
		effects: s.capacityEffects,
	})
}

// parseCapacity reads the capacity asked for; given is false when the
// form has none.
func parseCapacity(f form, _ int64) (capacity int64, given bool, err error) {
	if f.text(capacityField) == "" {
		return 0, false, nil
	}
	capacity, err = ops.ParseCapacity(capacityField, f.text(capacityField))
	return capacity, true, err
}

// decodeCapacity reads the capacity the confirmation showed.
func decodeCapacity(from []string) (int64, bool) {
	counts, ok := fromCounts(from, 1)
	if !ok {
		return 0, false
	}
	return counts[0], true
}

// capacityChoice asks for the capacity of topic, the current one filled
// in.
func capacityChoice(topic string, current int64) []field {
	f := field{Name: capacityField, Label: fmt.Sprintf("Capacity of %q", topic),
		Help: "The most READY tasks, deferred ones included, that pushes may leave in the topic: a push that would leave more fails. 0 removes the capacity."}
	if current > 0 {
		f.Value = strconv.FormatInt(current, 10)
	}
	return []field{f}
}

// capacityEffects say what setting the capacity of topic to to does to
// its pushes.
func (s *Server) capacityEffects(topic string, _, to int64) []string {
	if to == 0 {
		return []string{"Every push will be admitted."}
	}
	ready := s.sampler.snapshot().ready[topic]
	lines := []string{fmt.Sprintf("A push that would leave more than %s READY tasks in it will fail and change nothing; it held %s READY at the last reading.", num(to), num(ready))}
	if ready > to {
		lines = append(lines, "It holds more already: it keeps them, and refuses pushes until consumers take it below its capacity.")
	}
	return lines
}

// capacityWords says a capacity in words: "a capacity of 1,000 READY
// tasks", "no capacity".
func capacityWords(n int64) string {
	if n <= 0 {
		return "no capacity"
	}
	return "a capacity of " + num(n) + " READY tasks"
}

// readyCapacities reads the bound of every topic's READY tasks
// (taskapi.Capacity.Ready), which the dashboard shows and sets; topics
// without one are left out.
func readyCapacities(ctx context.Context, store Store) (map[string]int64, error) {
	all, err := store.Capacities(ctx)
	if err != nil {
		return nil, err
	}
	ready := make(map[string]int64, len(all))
	for topic, c := range all {
		if c.Ready > 0 {
			ready[topic] = c.Ready
		}
	}
	return ready, nil
}

// setReadyCapacity sets the bound of topic's READY tasks to n, 0 removing
// it, and keeps the bound of each of its identifiers
// (taskapi.Capacity.PerIdentifier), which 'taskctl topic capacity
// --per-identifier' sets.
func setReadyCapacity(ctx context.Context, store Store, topic string, n int64) error {
	all, err := store.Capacities(ctx)
	if err != nil {
		return fmt.Errorf("read the capacity of %q: %w", topic, err)
	}
	c := all[topic]
	c.Ready = n
	return store.SetCapacity(ctx, topic, c)
}
