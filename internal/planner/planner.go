// Package planner holds the statements by which taskpg and taskansi turn
// PostgreSQL's planner away from what costs a poll under limits more than
// it saves: JIT compilation, whose plans beside a large backlog cost past
// jit_above_cost and compile for far longer than they run, and bitmap
// scans, which read a short range whole and visit the row of every dead
// index entry at every poll, where an index scan marks them dead once.
// set_config(..., true) lasts until the transaction ends, and a savepoint
// rolled back takes it back with the rest.
package planner

const (
	// Off turns both off for the rest of a transaction of the poll's own.
	Off = `SELECT set_config('jit', 'off', true), set_config('enable_bitmapscan', 'off', true)`
	// OffSaved turns both off in a caller's transaction, with the caller's
	// settings saved for Restored.
	OffSaved = `
SELECT set_config('taskrepo.jit', current_setting('jit'), true),
       set_config('taskrepo.bitmapscan', current_setting('enable_bitmapscan'), true),
       set_config('jit', 'off', true), set_config('enable_bitmapscan', 'off', true)`
	// Restored gives the caller the settings that OffSaved saved; it is a
	// select list, to which a backend may add expressions of its own.
	Restored = `
SELECT set_config('jit', current_setting('taskrepo.jit'), true),
       set_config('enable_bitmapscan', current_setting('taskrepo.bitmapscan'), true)`
)
