package batch

import (
	"slices"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// SortRoster sorts the owners of a roster by name, in byte order.
func SortRoster(roster []taskapi.OwnerStatus) {
	slices.SortFunc(roster, func(a, b taskapi.OwnerStatus) int { return strings.Compare(a.Owner, b.Owner) })
}

// Hold records in roster, sorted by SortRoster, that owner holds n Active
// tasks of topic. An owner that is not in the roster (not registered) is
// left out.
func Hold(roster []taskapi.OwnerStatus, owner, topic string, n int64) {
	i, found := slices.BinarySearchFunc(roster, owner, func(s taskapi.OwnerStatus, owner string) int {
		return strings.Compare(s.Owner, owner)
	})
	if !found || n == 0 {
		return
	}
	if roster[i].Held == nil {
		roster[i].Held = map[string]int64{}
	}
	roster[i].Held[topic] += n
}
