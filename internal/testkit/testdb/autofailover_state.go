package testdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// autoFailoverPatience bounds the wait for the monitor to report what a
// step of an AutoFailover awaits: with pg_auto_failover's defaults, a
// failover alone takes about a minute.
const autoFailoverPatience = 3 * time.Minute

// nodeState is what the monitor says of a node: the state its keeper last
// reported and the state the monitor assigned it.
type nodeState struct {
	name, reported, assigned string
}

// settled reports whether the node reached the state that the monitor
// assigned, and it is state.
func (s nodeState) settled(state string) bool { return s.reported == state && s.assigned == state }

// String returns the state as `pg_autoctl show state` shows it.
func (s nodeState) String() string { return s.name + ": " + s.reported + "/" + s.assigned }

// states returns what the monitor says of every node, in the order they
// registered.
func (f *AutoFailover) states(ctx context.Context) ([]nodeState, error) {
	conn, err := pgx.Connect(ctx, f.MonitorURL())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (nodeState, error) {
		var s nodeState
		return s, row.Scan(&s.name, &s.reported, &s.assigned)
	})
}

// awaitStates waits until the monitor's states satisfy done, and fails,
// quoting the states and the keepers' logs, after autoFailoverPatience.
func (f *AutoFailover) awaitStates(ctx context.Context, what string, done func([]nodeState) bool) error {
	ctx, cancel := context.WithTimeout(ctx, autoFailoverPatience)
	defer cancel()
	var last []nodeState // the last states the monitor told
	for {
		states, err := f.states(ctx)
		if err == nil && done(states) {
			return nil
		}
		if err == nil {
			last = states
		}
		if ctx.Err() != nil {
			var logs strings.Builder
			for _, k := range append(f.nodes[:], f.monitor) {
				fmt.Fprintf(&logs, "\n%s logged:\n%s", k.name, f.readLog(k))
			}
			return fmt.Errorf("no %s after %v: the monitor said %v (then %v)%s", what, autoFailoverPatience, last, err, logs.String())
		}
		time.Sleep(10 * pollInterval)
	}
}

// awaitHealthy waits until the monitor reports one node primary and the
// other secondary, each in the state it was assigned: the primary then
// waits for its standby again.
func (f *AutoFailover) awaitHealthy(ctx context.Context) error {
	return f.awaitStates(ctx, "primary and secondary", healthy)
}

// healthy reports whether states are those of a primary and its secondary.
func healthy(states []nodeState) bool {
	if len(states) != 2 {
		return false
	}
	a, b := states[0], states[1]
	return (a.settled("primary") && b.settled("secondary")) || (a.settled("secondary") && b.settled("primary"))
}

// primary returns the node that the monitor says is the primary, and
// settled as one.
func (f *AutoFailover) primary(ctx context.Context) (*keeper, error) {
	states, err := f.states(ctx)
	if err != nil {
		return nil, fmt.Errorf("ask the monitor for the primary: %w", err)
	}
	for _, s := range states {
		for _, k := range f.nodes {
			if k.name == s.name && s.settled("primary") {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("no settled primary: the monitor says %v", states)
}

// PrimaryAddr returns the host and port of the node that the monitor says
// is the primary now.
func (f *AutoFailover) PrimaryAddr(ctx context.Context) (string, error) {
	k, err := f.primary(ctx)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(k.port), nil
}
