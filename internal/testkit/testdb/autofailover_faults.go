package testdb

import (
	"context"
	"fmt"
	"strconv"
)

// Crash ends the primary's node as a crash of its host would: SIGKILL to
// its keeper and its PostgreSQL, every process at once. The monitor then
// notices, on its own schedule, and promotes the standby (with the
// defaults in about a minute, tuned in some ten seconds). It returns once
// the processes are gone, not when the standby is promoted. It fails
// while a node is down (Crash without Recover).
func (f *AutoFailover) Crash(ctx context.Context) error {
	if f.crashed != nil {
		return fmt.Errorf("crash the primary: %s is still down", f.crashed.name)
	}
	k, err := f.primary(ctx)
	if err != nil {
		return err
	}
	if err := f.crash(k); err != nil {
		return err
	}
	f.crashed = k
	return nil
}

// Recover waits until the monitor promoted the other node (which it does
// on its own schedule after Crash), then starts the keeper of the node
// that Crash ended, which finds that the monitor demoted it and rejoins as
// the new primary's standby (pg_rewind), and returns when the monitor
// reports the pair healthy again: a primary and its secondary, each
// settled. Started before the promotion, the keeper would find its node
// still the primary, and the monitor would never fail over.
func (f *AutoFailover) Recover(ctx context.Context) error {
	k := f.crashed
	if k == nil {
		return fmt.Errorf("recover: no node is down")
	}
	promoted := func(states []nodeState) bool {
		for _, s := range states {
			if s.name != k.name && (s.reported == "wait_primary" || s.reported == "primary") {
				return true
			}
		}
		return false
	}
	if err := f.awaitStates(ctx, "promotion of the standby", promoted); err != nil {
		return err
	}
	if err := f.start(k); err != nil {
		return err
	}
	f.crashed = nil
	return f.awaitHealthy(ctx)
}

// Switchover asks the monitor for a planned switchover (`pg_autoctl
// perform switchover`): the primary is demoted and the standby promoted
// once it has every commit. It returns when the monitor reports the pair
// healthy again, the roles swapped.
func (f *AutoFailover) Switchover(ctx context.Context) error {
	if f.crashed != nil {
		return fmt.Errorf("switchover: %s is down", f.crashed.name)
	}
	if err := f.autoctlTool(ctx, "perform", "switchover", "--pgdata", f.monitor.pgdata,
		"--wait", strconv.Itoa(int(autoFailoverPatience.Seconds()))); err != nil {
		return err
	}
	return f.awaitHealthy(ctx)
}
