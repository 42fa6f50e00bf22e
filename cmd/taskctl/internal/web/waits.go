package web

import (
	"context"
	"slices"
	"time"

	"github.com/taskrepo/taskrepo/cmd/taskctl/internal/ops"
)

// headsPerTransaction is how many topics' heads of READY tasks one
// transaction reads. A head is an index probe per topic (there is no read
// of every topic's head at once); read each in a transaction of its own,
// BEGIN and COMMIT would cost two more round trips each, three in all. The
// locks a transaction takes on the partitions it reads, and on their
// indexes, add up until it ends, so a transaction lets them go every few
// dozen topics, as taskpg's reads of many topics do.
const headsPerTransaction = 32

// readWaits reads the head of the READY tasks of every topic of topics
// that ready says has some (ops.Waiting), headsPerTransaction topics a
// transaction.
func readWaits(ctx context.Context, store Store, topics []string, ready map[string]int64, now time.Time) (map[string]ops.Wait, error) {
	waits := map[string]ops.Wait{}
	busy := slices.DeleteFunc(slices.Clone(topics), func(t string) bool { return ready[t] == 0 })
	for chunk := range slices.Chunk(busy, headsPerTransaction) {
		err := store.Pages(ctx, func(p ops.Pager) error {
			for _, topic := range chunk {
				w, err := ops.Waiting(ctx, p, topic, now)
				if err != nil {
					return err
				}
				waits[topic] = w
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return waits, nil
}
