package conformance

import (
	"testing"
)

// ReadOnly checks the calls on a database whose server refuses writes, as
// a standby does, or a server that an administrator made read-only:
// readOnly returns a handle on the database of db, a handle of b.Open,
// whose sessions may only read (a role's default_transaction_read_only,
// MariaDB's read_only for a user who may not bypass it). Every call that
// writes fails there with an error that want accepts (the driver's error
// stays in the chain); every call that only reads succeeds, and so may
// Refresh, whose statistics are no stored data (PostgreSQL analyzes in a
// read-only transaction), and so does Bound in a transaction there (see
// wantBoundReads); nothing has changed; and db serves a push afterwards.
func ReadOnly[Tx any](t *testing.T, b Backend[Tx], readOnly func(t *testing.T, db Tx) Tx, want func(t *testing.T, call string, err error)) {
	s := stageSetup(t, b)
	before := s.capture()
	reads := map[string]bool{"Activations": true, "Hold": true} // Hold on a pool reads the term, and holds nothing
	for _, c := range s.readCalls() {
		reads[c.name] = true
	}
	h := readOnly(t, s.db)
	for _, c := range s.calls() {
		switch err := c.run(s.ctx, h); {
		case reads[c.name] && err != nil:
			t.Errorf("%s, which only reads, on a read-only database: %v", c.name, err)
		case reads[c.name], c.name == "Refresh" && err == nil:
		case err == nil:
			t.Errorf("%s on a read-only database succeeded", c.name)
		default:
			t.Logf("%s on a read-only database: %v", c.name, err)
			want(t, c.name, err)
		}
	}
	s.wantBoundReads(h)
	s.wantSame("the calls on a read-only database", before)
	s.wantUsable(s.db)
	s.wantNeverLed()
}
