package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/taskapi"
)

// testAudit checks taskapi.Auditor: entries come back newest first with
// every field as recorded, their IDs growing and their times the
// database's, in UTC; pages follow the cursor; bad input is
// ErrInvalidArgument and records nothing; recording changes no task or
// topic; inside a caller's transaction an entry lasts only if the
// transaction commits, and a refused one leaves the transaction usable.
// Every backend's repository implements it.
func testAudit[Tx any](t *testing.T, b Backend[Tx]) {
	const topic = "audited"
	all := map[string]func(t *testing.T){}

	all["NewestFirstWithEveryField"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		hostile := taskapi.AuditEntry{Actor: "O'Brien \"<b>\" \u202eévil", Origin: "dashboard", Action: "purge",
			Params: `{"topic":["o'r<d>ers"],"state":["FAILED"],"note":"\u202e"}`, Bound: "up to sequence 12, seen at 2026-11-27T03:00:00Z",
			Changed: 5, Outcome: "deleted 5 tasks of \"o'r<d>ers\"\n(sequences 1 to 12)."}
		first := w.record(taskapi.AuditEntry{Actor: "alice", Origin: "cli", Action: "pause", Params: `{"topic":["a"]}`, Changed: 1})
		second := w.record(hostile)
		if second.ID <= first.ID {
			t.Errorf("IDs %d then %d, want growing", first.ID, second.ID)
		}
		for _, e := range []taskapi.AuditEntry{first, second} {
			ppcWantTime(t, fmt.Sprintf("time of entry %d", e.ID), e.At)
		}
		if second.At.Before(first.At) {
			t.Errorf("the second entry's time %v is before the first's %v", second.At, first.At)
		}
		got := w.auditLog(0, 10)
		wantEntries(t, got, second, first)
		hostile.ID, hostile.At = second.ID, second.At
		if got[0] != hostile {
			t.Errorf("read back %+v, want %+v", got[0], hostile)
		}
	}

	all["PagedByCursor"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		var recorded []taskapi.AuditEntry
		for i := range 7 {
			recorded = append(recorded, w.record(taskapi.AuditEntry{Actor: "bob", Origin: "cli", Action: fmt.Sprintf("act-%d", i)}))
		}
		var pages [][]taskapi.AuditEntry
		for before := int64(0); ; {
			page := w.auditLog(before, 3)
			if len(page) == 0 {
				break
			}
			pages = append(pages, page)
			before = page[len(page)-1].ID
		}
		if len(pages) != 3 || len(pages[0]) != 3 || len(pages[1]) != 3 || len(pages[2]) != 1 {
			t.Fatalf("pages of 3 = %v, want 3, 3 and 1 entries", pages)
		}
		var read []taskapi.AuditEntry
		for _, page := range pages {
			read = append(read, page...)
		}
		for i, e := range read {
			if want := recorded[len(recorded)-1-i]; e != want {
				t.Errorf("entry %d read %+v, want %+v", i, e, want)
			}
		}
		if got := w.auditLog(recorded[0].ID, 10); len(got) != 0 {
			t.Errorf("entries before the first = %v, want none", got)
		}
		if got := w.auditLog(0, 0); len(got) != 0 {
			t.Errorf("a page of 0 entries = %v, want none", got)
		}
	}

	all["BadInputRefused"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		a := w.auditor()
		good := taskapi.AuditEntry{Actor: "carol", Origin: "cli", Action: "revive", Params: `{"topic":["t"]}`}
		for name, change := range map[string]func(e *taskapi.AuditEntry){
			"no actor":         func(e *taskapi.AuditEntry) { e.Actor = "" },
			"no origin":        func(e *taskapi.AuditEntry) { e.Origin = "" },
			"no action":        func(e *taskapi.AuditEntry) { e.Action = "" },
			"long actor":       func(e *taskapi.AuditEntry) { e.Actor = strings.Repeat("a", taskapi.MaxActorLength+1) },
			"long origin":      func(e *taskapi.AuditEntry) { e.Origin = strings.Repeat("o", taskapi.MaxOriginLength+1) },
			"long action":      func(e *taskapi.AuditEntry) { e.Action = strings.Repeat("x", taskapi.MaxActionLength+1) },
			"NUL in actor":     func(e *taskapi.AuditEntry) { e.Actor = "a\x00b" },
			"NUL in outcome":   func(e *taskapi.AuditEntry) { e.Outcome = "done\x00" },
			"invalid UTF-8":    func(e *taskapi.AuditEntry) { e.Bound = "\xff\xfe" },
			"params not JSON":  func(e *taskapi.AuditEntry) { e.Params = "topic=t" },
			"params a list":    func(e *taskapi.AuditEntry) { e.Params = `["t"]` },
			"negative count":   func(e *taskapi.AuditEntry) { e.Changed = -1 },
			"broken JSON tail": func(e *taskapi.AuditEntry) { e.Params = `{"a":1} x` },
		} {
			e := good
			change(&e)
			if _, err := a.Record(w.ctx, w.db, e); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("Record with %s: error %v, want ErrInvalidArgument", name, err)
			}
		}
		for _, c := range []struct {
			before int64
			limit  int
		}{{-1, 10}, {0, taskapi.MaxAuditPage + 1}} {
			if _, err := a.AuditLog(w.ctx, w.db, c.before, c.limit); !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Errorf("AuditLog(%d, %d): error %v, want ErrInvalidArgument", c.before, c.limit, err)
			}
		}
		if got := w.auditLog(0, taskapi.MaxAuditPage); len(got) != 0 {
			t.Errorf("after refused entries the log holds %v, want nothing", got)
		}
	}

	all["NothingElseChanges"] = func(t *testing.T) {
		w := worldOf(setup(t, b, topic))
		w.pushIDs(topic, "x", "y")
		w.poll(topic, 1)
		before := w.snapshot(topic)
		w.record(taskapi.AuditEntry{Actor: "dave", Origin: "dashboard", Action: "purge", Params: `{"topic":["audited"]}`, Changed: 2})
		w.unchanged(before)
		w.wantTopics(topic)
	}

	all["InsideATransaction"] = func(t *testing.T) {
		w := worldOf(setup(t, b))
		a := w.auditor()
		tx, end := w.begin()
		if _, err := a.Record(w.ctx, tx, taskapi.AuditEntry{Actor: "erin", Origin: "cli", Action: "gone"}); err != nil {
			t.Fatalf("Record in a transaction: %v", err)
		}
		end(false)
		if got := w.auditLog(0, 10); len(got) != 0 {
			t.Errorf("after a rollback the log holds %v, want nothing", got)
		}
		tx, end = w.begin()
		if _, err := a.Record(w.ctx, tx, taskapi.AuditEntry{Origin: "cli", Action: "refused"}); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Record without actor in a transaction: error %v, want ErrInvalidArgument", err)
		}
		kept, err := a.Record(w.ctx, tx, taskapi.AuditEntry{Actor: "erin", Origin: "cli", Action: "kept"})
		if err != nil {
			t.Fatalf("Record after a refused one in the same transaction: %v", err)
		}
		if got, err := a.AuditLog(w.ctx, tx, 0, 10); err != nil || len(got) != 1 || got[0] != kept {
			t.Errorf("AuditLog inside the transaction = %v, %v; want %+v", got, err, kept)
		}
		end(true)
		wantEntries(t, w.auditLog(0, 10), kept)
	}

	cases(t, all)
}

// auditor returns the repository as a taskapi.Auditor.
func (w *world[Tx]) auditor() taskapi.Auditor[Tx] {
	w.t.Helper()
	return extension[taskapi.Auditor[Tx]](w.t, w.repo)
}

// record records e on the pool and fails the test on error.
func (w *world[Tx]) record(e taskapi.AuditEntry) taskapi.AuditEntry {
	w.t.Helper()
	got, err := w.auditor().Record(w.ctx, w.db, e)
	w.must(err, "Record(%+v)", e)
	return got
}

// auditLog reads a page of the audit log on the pool and fails the test on
// error.
func (w *world[Tx]) auditLog(before int64, limit int) []taskapi.AuditEntry {
	w.t.Helper()
	got, err := w.auditor().AuditLog(w.ctx, w.db, before, limit)
	w.must(err, "AuditLog(%d, %d)", before, limit)
	return got
}

// wantEntries fails the test unless got holds exactly want, in order.
func wantEntries(t *testing.T, got []taskapi.AuditEntry, want ...taskapi.AuditEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("audit log = %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("audit entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
