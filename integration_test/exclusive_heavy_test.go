//go:build heavy

package integration_test

import (
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/taskpg"
)

// TestTaskpgExclusiveConformance runs the suite on taskpg WithExclusive, a
// variant of taskpg's statements (polls wait for locked rows instead of
// skipping them) over the same Go code, which the race detector already
// watches under the plain suite. It is a heavy test (built with the tag
// heavy, run by CI's step heavy without -race): the fifth suite made the
// test command's run longer than its ten minutes on a busy machine.
func TestTaskpgExclusiveConformance(t *testing.T) {
	t.Parallel() // the suites run side by side, after the other tests (see parallelCases)
	b := pgBackend(taskpg.WithExclusive())
	b.Exclusive = true
	conformance.Run(t, b)
}
