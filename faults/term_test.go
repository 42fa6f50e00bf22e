package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// A leader never settles after another process leads: the transaction that
// completes a batch of an exclusive topic ends with the term's check in its
// own SQL (Leader.Hold), which holds off the next term until it commits.
// Two consumer processes lead the topic in turn under terms of 1.5 s while
// a leader is stopped with SIGSTOP past its term (but not past its expiry),
// or while the database's clock steps forward; a trigger that runs as each
// effect row commits (a deferred constraint trigger) records which owner's
// term is current at that moment. No effect may commit under another
// owner's term. Before the check, a stopped leader committed after its
// successor began, 1 time in 44, and under a stepping clock 3 to 9 times a
// run.

const (
	termTopic  = "led"
	termTTL    = 1500 * time.Millisecond
	termExpiry = 4 * time.Second // a stop of termStop and a clock step stay within it
	termStop   = 2500 * time.Millisecond
	termStep   = 1300 * time.Millisecond
	termTasks  = 1000 // per round: the leaders never run out of work
	termWork   = 100 * time.Millisecond
)

// termRounds is how many stops or steps each test makes: 3 in the test
// command, 20 in CI's heavy step (TASK_TEST_TERM_ROUNDS).
func termRounds() int {
	if n, err := strconv.Atoi(os.Getenv("TASK_TEST_TERM_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// termTables add to the fault tables the owner whose term was current when
// each effect committed.
var termTables = []string{
	"ALTER TABLE fault_effect ADD COLUMN leader text",
	`CREATE FUNCTION fault_leader_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE fault_effect SET leader = coalesce((SELECT owner FROM task_leader
		WHERE topic = '` + termTopic + `' AND expires > (clock_timestamp() AT TIME ZONE 'utc')), '')
	WHERE id = NEW.id;
	RETURN NULL;
END $$`,
	`CREATE CONSTRAINT TRIGGER fault_effect_leader AFTER INSERT ON fault_effect
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fault_leader_at_commit()`,
}

// openTermDB prepares the database at url for the term tests.
func openTermDB(t *testing.T, url string) (*pgxpool.Pool, *taskpg.Repository) {
	pool, repo := openFaultDB(t, url, termTopic)
	for _, stmt := range termTables {
		if _, err := pool.Exec(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	creations := make([]taskapi.Creation, termTasks*termRounds())
	for i := range creations {
		creations[i] = taskapi.Creation{Identifier: fmt.Sprintf("led-%05d", i)}
	}
	if _, err := repo.Push(context.Background(), pool, termTopic, taskapi.Append, creations...); err != nil {
		t.Fatal(err)
	}
	return pool, repo
}

// startLeaders starts the two consumer processes that lead the topic in
// turn.
func startLeaders(t *testing.T, url string) map[string]*worker {
	workers := map[string]*worker{}
	for _, owner := range []string{"leader-a", "leader-b"} {
		workers[owner] = startWorker(t, url, termTopic, owner, "-leadership", termTTL.String(),
			"-expiry", termExpiry.String(), "-work", termWork.String(), "-stubborn")
	}
	return workers
}

// currentLeader returns the owner of the topic's current term, waiting
// until there is one.
func currentLeader(t *testing.T, pool *pgxpool.Pool) string {
	var owner string
	deadline := time.Now().Add(workerPatience)
	for {
		err := pool.QueryRow(context.Background(), "SELECT owner FROM task_leader WHERE topic = $1 AND expires > (clock_timestamp() AT TIME ZONE 'utc')", termTopic).Scan(&owner)
		if err == nil {
			return owner
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process led %q within %v: %v", termTopic, workerPatience, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAStoppedLeaderNeverCommitsAfterItsSuccessorLeads stops the leader
// with SIGSTOP for 2.5 s, past its term of 1.5 s, while its batch works,
// and lets it go on; the other process leads meanwhile.
func TestAStoppedLeaderNeverCommitsAfterItsSuccessorLeads(t *testing.T) {
	url := testdb.PostgresURL(t)
	pool, _ := openTermDB(t, url)
	workers := startLeaders(t, url)
	for range termRounds() {
		w := workers[currentLeader(t, pool)]
		time.Sleep(termWork / 2) // into a batch
		if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(termStop)
		if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		time.Sleep(termTTL) // the resumed process settles what it held
	}
	for _, w := range workers {
		w.stop(t)
	}
	checkTerms(t, pool)
}

// TestALeaderNeverCommitsUnderAStepOfTheDatabaseClock steps the clock of a
// PostgreSQL of the test's own 1.3 s forward every 4 s (libfaketime): a
// term then ends on the database's clock before the leader's local
// timer says so, and its successor may take over while it still works.
func TestALeaderNeverCommitsUnderAStepOfTheDatabaseClock(t *testing.T) {
	lib := libfaketime(t)
	// Not t.TempDir(): the server runs as another user when the tests run
	// as root, and must read the file.
	dir, err := os.MkdirTemp("", "taskrepo-faketime")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	offset := filepath.Join(dir, "faketime")
	writeOffset := func(d time.Duration) {
		if err := os.WriteFile(offset, fmt.Appendf(nil, "%+.3fs\n", d.Seconds()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeOffset(0)
	c := testdb.OwnPostgresEnv(t, "LD_PRELOAD="+lib, "FAKETIME_TIMESTAMP_FILE="+offset, "FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1") // its timeouts and latches keep the real pace
	pool, _ := openTermDB(t, c.URL())
	workers := startLeaders(t, c.URL())
	currentLeader(t, pool)
	repo, err := taskpg.New("clock-reader") // reads the database's clock
	if err != nil {
		t.Fatal(err)
	}
	for round := range termRounds() {
		time.Sleep(4 * time.Second)
		writeOffset(time.Duration(round+1) * termStep)
		now, err := repo.Now(context.Background(), pool)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("step %d: the database's clock runs %v ahead", round+1, time.Until(now).Round(100*time.Millisecond))
	}
	time.Sleep(termTTL)
	for _, w := range workers {
		w.stop(t)
	}
	checkTerms(t, pool)
}

// checkTerms checks that no effect committed while another owner's term
// was current, that each task that succeeded has one effect, and reports
// the effects that committed after their term ended with nobody leading.
func checkTerms(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	var effects, overlaps, unled, twice int
	err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE leader <> '' AND leader <> owner),
		count(*) FILTER (WHERE leader = ''),
		(SELECT count(*) FROM (SELECT sequence FROM fault_effect GROUP BY sequence HAVING count(*) > 1) AS d)
		FROM fault_effect`).Scan(&effects, &overlaps, &unled, &twice)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d effects of %d tasks; %d committed under another owner's term, %d after their term ended with nobody leading", effects, termTasks*termRounds(), overlaps, unled)
	if effects == 0 {
		t.Error("no effect committed: the leaders did no work")
	}
	if overlaps > 0 {
		t.Errorf("%d effects committed while another process led", overlaps)
	}
	if twice > 0 {
		t.Errorf("%d tasks have more than one effect", twice)
	}
}
