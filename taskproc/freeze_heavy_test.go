//go:build heavy

package taskproc_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/taskansi"
)

// TestAFrozenConnectionHoldsNoTask freezes every statement of a run, in
// turn, on taskpg, on taskansi's PostgreSQL dialect and on MariaDB (see
// freeze_test.go): some 150 runs a backend, too many for the test command.
func TestAFrozenConnectionHoldsNoTask(t *testing.T) {
	t.Run("taskpg", func(t *testing.T) { t.Parallel(); freezePathsOf(t, pgFreezeRig()) })
	t.Run("taskansi-postgres", func(t *testing.T) { t.Parallel(); freezePathsOf(t, ansiPostgresFreezeRig()) })
	t.Run("taskansi-mysql", func(t *testing.T) { t.Parallel(); freezePathsOf(t, mysqlFreezeRig()) })
}

// freezePathsOf freezes every path on rig.
func freezePathsOf[Tx any](t *testing.T, rig *freezeRig[Tx]) {
	for name, path := range freezePaths[Tx]() {
		t.Run(name, func(t *testing.T) { t.Parallel(); freezeEvery(t, rig, path) })
	}
}

// freezeEvery runs path once without a freeze, to count the statements
// until its task is settled, then once with a freeze at each of them, in
// parallel.
func freezeEvery[Tx any](t *testing.T, rig *freezeRig[Tx], path freezePath[Tx]) {
	calibration := freezeOnce(t, rig, path, nth(0), netproxy.Before)
	if calibration.statement == 0 {
		t.Fatal("the Client sent no statement to freeze")
	}
	t.Logf("without a freeze: %d statements, settled in %v", calibration.statement, calibration.took.Round(time.Millisecond))
	for _, mode := range []netproxy.Mode{netproxy.Before, netproxy.After} {
		for k := 1; k <= calibration.statement; k++ {
			t.Run(fmt.Sprintf("%v/%d", mode, k), func(t *testing.T) {
				t.Parallel()
				run := freezeOnce(t, rig, path, nth(k), mode)
				if run.fired {
					text := strings.Join(strings.Fields(run.at.SQL), " ")
					t.Logf("frozen %v %s %q: settled in %v", mode, run.at.Message, text[:min(len(text), 60)], run.took.Round(time.Millisecond))
				}
			})
		}
	}
}

// nth is the matcher of nthCounted for k.
func nth(k int) func(*atomic.Int32) func(netproxy.Statement) bool {
	return func(counted *atomic.Int32) func(netproxy.Statement) bool { return nthCounted(k, counted) }
}

// mysqlFreezeRig is taskansi on MariaDB, whose server ends a transaction
// left idle for a second, as docs/operating.md advises for a runtime
// whose statements are bounded so (MariaDB cannot bound one transaction).
func mysqlFreezeRig() *freezeRig[taskansi.DB] {
	readCommitted := &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	return ansiFreezeRig(taskansi.MySQL, readCommitted, "frozen_effect", "?", func(t *testing.T) (*sql.DB, *sql.DB, *netproxy.Proxy) {
		direct, proxy, dsn := proxiedMySQL(t, map[string]string{"idle_transaction_timeout": "1"})
		// database/sql gives the driver's COMMIT no context: only the DSN's
		// readTimeout bounds one that gets no answer (docs/backends.md).
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 2*time.Second
		proxied, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		keepWarm(proxied)
		t.Cleanup(func() { proxied.Close() })
		return direct, proxied, proxy
	})
}
