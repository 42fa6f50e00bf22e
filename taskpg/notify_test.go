package taskpg_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

var _ taskproc.Notifier = (*taskpg.Notifier)(nil)

// notifyPatience bounds every wait for a notification; nothing is timed.
const notifyPatience = 30 * time.Second

// everything stands for a callback called with no topics.
const everything = "*"

// heard records what a Notifier hands to its callbacks.
type heard struct {
	wakes, dues, activations chan []string
	losses                   chan error
	pending                  []string // topics of wake-ups received and not yet expected
}

// listen runs a Notifier on pool until the test ends and returns once it
// listens (it says so with activated(nil), deferred(nil) and wake(nil)).
func listen(t *testing.T, pool *pgxpool.Pool, opts ...taskpg.NotifierOption) *heard {
	t.Helper()
	h := &heard{wakes: make(chan []string, 10_000), dues: make(chan []string, 10_000),
		activations: make(chan []string, 10_000), losses: make(chan error, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- taskpg.NewNotifier(pool, opts...).Listen(ctx,
			func(topics []string) { h.wakes <- topics },
			func(topics []string) { h.dues <- topics },
			func(topics []string) { h.activations <- topics },
			func(err error) { h.losses <- err })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Listen returned %v, want context.Canceled", err)
		}
	})
	h.expectEverything(t)
	return h
}

// expectEverything waits for activated(nil), deferred(nil) and wake(nil).
func (h *heard) expectEverything(t *testing.T) {
	t.Helper()
	if got := receive(t, h.activations, "activated"); got != nil {
		t.Fatalf("activated(%q), want activated(nil)", got)
	}
	if got := receive(t, h.dues, "deferred"); got != nil {
		t.Fatalf("deferred(%q), want deferred(nil)", got)
	}
	h.expect(t, everything)
}

// expect waits for wake-ups of topics, in this order, and fails on any
// other wake-up before them.
func (h *heard) expect(t *testing.T, topics ...string) {
	t.Helper()
	for _, want := range topics {
		for len(h.pending) == 0 {
			got := receive(t, h.wakes, "wake")
			if got == nil {
				got = []string{everything}
			}
			h.pending = got
		}
		if got := h.pending[0]; got != want {
			t.Fatalf("woken for %q, want %q", got, want)
		}
		h.pending = h.pending[1:]
	}
}

// receive returns the next value of c, and fails after notifyPatience.
func receive[T any](t *testing.T, c chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(notifyPatience):
		t.Fatalf("no %s within %v", what, notifyPatience)
		panic("unreachable")
	}
}

// inTx runs fn in a transaction on pool and commits it, or rolls it back
// when commit is false.
func inTx(t *testing.T, pool *pgxpool.Pool, commit bool, fn func(tx pgx.Tx)) {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	fn(tx)
	if commit {
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// many returns n creations with distinct identifiers.
func many(n int) []taskapi.Creation {
	identifiers := make([]string, n)
	for i := range identifiers {
		identifiers[i] = fmt.Sprintf("id-%d", i)
	}
	return ids(identifiers...)
}

// A committed push notifies its topic, a rolled-back one nothing.
func TestPushWakesOnCommitOnly(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "pool", "committed", "rolled back", "marker")
	h := listen(t, db)
	push(t, repo, db, "pool", taskapi.Append, ids("a")...)
	h.expect(t, "pool")
	inTx(t, db, true, func(tx pgx.Tx) { push(t, repo, tx, "committed", taskapi.Append, ids("a")...) })
	h.expect(t, "committed")
	inTx(t, db, false, func(tx pgx.Tx) { push(t, repo, tx, "rolled back", taskapi.Append, ids("a")...) })
	inTx(t, db, false, func(tx pgx.Tx) { push(t, repo, tx, "rolled back", taskapi.Append, many(150)...) })
	push(t, repo, db, "marker", taskapi.Append, ids("a")...)
	h.expect(t, "marker")
}

// Every way of pushing notifies once it commits: one task, a few, many
// (COPY), each insertion mode and a revival that pushes, on the pool, on a
// connection and in a transaction.
func TestEveryPushWakes(t *testing.T) {
	t.Parallel()
	db := testdb.Postgres(t)
	repo := newRepo(t, db, "a", taskpg.WithWakeUps(0))
	quiet := newRepo(t, db, "q", taskpg.WithoutWakeUps())
	h := listen(t, db)
	pushers := map[string]func(db taskpg.DB, topic string){
		"one":   func(db taskpg.DB, topic string) { push(t, repo, db, topic, taskapi.Append, ids("a")...) },
		"a few": func(db taskpg.DB, topic string) { push(t, repo, db, topic, taskapi.Append, many(5)...) },
		"many":  func(db taskpg.DB, topic string) { push(t, repo, db, topic, taskapi.Append, many(150)...) },
		"revival": func(db taskpg.DB, topic string) {
			tasks := push(t, quiet, db, topic, taskapi.Append, ids("a")...)
			complete(t, quiet, db, topic, taskapi.Failure, poll(t, quiet, db, topic, 1)...)
			if _, err := repo.ReviveTasks(t.Context(), db, topic, taskapi.ReviveAppend, tasks...); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, insertion := range []taskapi.Insertion{taskapi.Supersede, taskapi.Replace, taskapi.Delete} {
		pushers[insertion.String()] = func(db taskpg.DB, topic string) {
			push(t, quiet, db, topic, taskapi.Append, many(3)...)
			push(t, repo, db, topic, insertion, many(2)...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pushers)) {
		pushOn := pushers[name]
		for handle, run := range map[string]func(topic string){
			"pool": func(topic string) { pushOn(db, topic) },
			"transaction": func(topic string) {
				inTx(t, db, true, func(tx pgx.Tx) { pushOn(tx, topic) })
			},
			"connection": func(topic string) {
				conn, err := db.Acquire(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Release()
				pushOn(conn, topic)
			},
		} {
			topic := name + " on a " + handle
			if _, err := repo.Initialize(t.Context(), db, topic); err != nil {
				t.Fatal(err)
			}
			run(topic)
			h.expect(t, topic)
		}
	}
}

// A push of deferred tasks, due or not, notifies DueChannel, which the
// Notifier hands to deferred, and no wake-up; a push of ready tasks only
// wakes; a push of both kinds is a push of deferred tasks. Each kind has
// an interval of its own: a push of ready tasks does not silence the next
// push of deferred ones.
func TestDeferredPushesNotifyTheirOwnChannel(t *testing.T) {
	t.Parallel()
	db, _ := setup(t, "later", "now", "both", "marker")
	repo := newRepo(t, db, "b", taskpg.WithWakeUps(time.Hour))
	h := listen(t, db)
	future := taskapi.Creation{Identifier: "f", NotBefore: time.Now().Add(time.Hour)}
	past := taskapi.Creation{Identifier: "p", NotBefore: time.Now().Add(-time.Hour)}
	push(t, repo, db, "now", taskapi.Append, ids("a")...)
	push(t, repo, db, "later", taskapi.Append, future)
	inTx(t, db, true, func(tx pgx.Tx) { push(t, repo, tx, "both", taskapi.Append, taskapi.Creation{Identifier: "a"}, past) })
	push(t, repo, db, "now", taskapi.Append, future) // its own interval: notifies
	push(t, repo, db, "later", taskapi.Append, past) // the same interval as the first: silent
	h.expect(t, "now")
	var dues []string
	for len(dues) < 3 {
		dues = append(dues, receive(t, h.dues, "deferred")...)
	}
	if want := []string{"later", "both", "now"}; !slices.Equal(dues, want) {
		t.Fatalf("deferred(%q), want %q, one at a time", dues, want)
	}
	push(t, repo, db, "marker", taskapi.Append, ids("a")...)
	h.expect(t, "marker") // no other wake-up came before it
	select {
	case got := <-h.dues:
		t.Fatalf("deferred(%q) after the pushes' notifications", got)
	default:
	}
}

// The first push of a topic in an interval notifies, the others of the
// interval do not, however many and from however many goroutines.
func TestWakeUpsOncePerInterval(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t", "marker")
	throttled := newRepo(t, db, "b", taskpg.WithWakeUps(time.Hour))
	raw := rawListener(t, db)
	h := listen(t, db)
	for range 50 {
		push(t, throttled, db, "t", taskapi.Append, ids("a")...)
	}
	done := make(chan struct{})
	for range 5 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 10 {
				if _, err := throttled.Push(context.Background(), db, "t", taskapi.Append, ids("a")...); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 5 {
		<-done
	}
	push(t, repo, db, "marker", taskapi.Append, ids("a")...)
	h.expect(t, "t", "marker")
	if got, want := raw.until(t, "marker"), []string{"t", "marker"}; !slices.Equal(got, want) {
		t.Fatalf("notifications %q, want %q", got, want)
	}
}

// WithoutWakeUps and WithQuietTopics send nothing.
func TestPushesWithoutWakeUps(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t", "quiet", "loud")
	off := newRepo(t, db, "b", taskpg.WithoutWakeUps())
	someQuiet := newRepo(t, db, "c", taskpg.WithQuietTopics("quiet"))
	raw := rawListener(t, db)
	h := listen(t, db)
	push(t, off, db, "t", taskapi.Append, ids("a")...)
	push(t, off, db, "t", taskapi.Append, many(150)...)
	push(t, someQuiet, db, "quiet", taskapi.Append, ids("a")...)
	push(t, someQuiet, db, "loud", taskapi.Append, ids("a")...)
	h.expect(t, "loud")
	push(t, repo, db, "quiet", taskapi.Append, ids("b")...) // quiet for someQuiet only
	h.expect(t, "quiet")
	if got, want := raw.until(t, "quiet"), []string{"loud", "quiet"}; !slices.Equal(got, want) {
		t.Fatalf("notifications %q, want %q", got, want)
	}
}

// A push that fails notifies nothing and leaves the interval to the next.
func TestFailedPushLeavesTheWakeUp(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	repo := newRepo(t, db, "b", taskpg.WithWakeUps(time.Hour))
	h := listen(t, db)
	_, err := repo.Push(t.Context(), db, "late", taskapi.Append, ids("a")...)
	wantErr(t, err, taskapi.ErrUnknownTopic)
	if _, err := repo.Initialize(t.Context(), db, "late"); err != nil {
		t.Fatal(err)
	}
	push(t, repo, db, "late", taskapi.Append, ids("a")...)
	h.expect(t, "late")
}

// Pushes to another schema notify that schema's channel.
func TestWakeUpsWithSchema(t *testing.T) {
	t.Parallel()
	const schema = `we"ird sch'ema`
	db := migrateSchema(t, testdb.PostgresURL(t), schema)
	repo := newRepo(t, db, "a", taskpg.WithSchema(schema))
	if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
		t.Fatal(err)
	}
	public := listen(t, db)
	h := listen(t, db, taskpg.WithNotifierSchema(schema))
	push(t, repo, db, "t", taskapi.Append, ids("a")...)
	push(t, repo, db, "t", taskapi.Append, many(150)...)
	h.expect(t, "t")
	if _, err := db.Exec(t.Context(), "SELECT pg_notify($1, 'marker')", taskpg.TasksChannel("public")); err != nil {
		t.Fatal(err)
	}
	public.expect(t, "marker")
}

// Activation changes go to activated, an empty payload as every topic;
// notifications that arrive together are handed over together, each topic
// once.
func TestNotifierHandsOverWhatArrived(t *testing.T) {
	t.Parallel()
	db := testdb.Postgres(t)
	h := listen(t, db)
	notify := func(channel string, payloads ...string) {
		t.Helper()
		inTx(t, db, true, func(tx pgx.Tx) {
			for _, p := range payloads {
				if _, err := tx.Exec(t.Context(), "SELECT pg_notify($1, $2)", channel, p); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	notify("taskrepo_activation", "x")
	if got := receive(t, h.activations, "activated"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("activated(%q), want [x]", got)
	}
	notify("taskrepo_activation", "")
	if got := receive(t, h.activations, "activated"); got != nil {
		t.Fatalf("activated(%q), want nil", got)
	}
	var topics []string
	for i := range 100 {
		topics = append(topics, fmt.Sprintf("topic-%d", i))
	}
	notify(taskpg.TasksChannel("public"), topics...)
	notify(taskpg.TasksChannel("public"), topics...)
	notify(taskpg.TasksChannel("public"), "marker")
	calls, seen := 0, map[string]bool{}
	for !seen["marker"] {
		batch := receive(t, h.wakes, "wake")
		calls++
		if len(batch) == 0 || len(slices.Compact(slices.Sorted(slices.Values(batch)))) != len(batch) {
			t.Fatalf("wake(%q): want distinct topics", batch)
		}
		for _, topic := range batch {
			seen[topic] = true
		}
	}
	if len(seen) != len(topics)+1 {
		t.Fatalf("woken for %d topics, want %d", len(seen), len(topics)+1)
	}
	if calls >= 2*len(topics) {
		t.Fatalf("%d calls for %d notifications: nothing was handed over together", calls, 2*len(topics))
	}
	t.Logf("%d notifications in %d calls", 2*len(topics)+1, calls)
}

// A Notifier whose connection dies says so, connects again, wakes every
// topic and goes on handing pushes over.
func TestNotifierReconnects(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "before", "after")
	h := listen(t, db, taskpg.WithPingInterval(100*time.Millisecond))
	push(t, repo, db, "before", taskapi.Append, ids("a")...)
	h.expect(t, "before")
	var killed int
	err := db.QueryRow(t.Context(), `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = $1 AND datname = current_database()`, taskpg.NotifierApplicationName).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d backends: %v", killed, err)
	}
	if err := receive(t, h.losses, "lost"); err == nil {
		t.Fatal("lost(nil)")
	}
	h.expectEverything(t)
	push(t, repo, db, "after", taskapi.Append, ids("a")...)
	h.expect(t, "after")
	select {
	case err := <-h.losses:
		t.Fatalf("lost(%v) after the reconnection", err)
	default:
	}
}

// Listen ends with its context and leaves no goroutine behind.
func TestListenEndsWithItsContext(t *testing.T) {
	db := testdb.Postgres(t)
	if err := db.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(t.Context())
	listening := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- taskpg.NewNotifier(db).Listen(ctx, func([]string) {
			select {
			case listening <- struct{}{}:
			default:
			}
		}, nil, nil, func(err error) { t.Errorf("lost(%v)", err) })
	}()
	receive(t, listening, "wake")
	cancel()
	if err := receive(t, done, "return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v, want context.Canceled", err)
	}
}

// rawNotes lists the payloads of the notifications of TasksChannel("public")
// as PostgreSQL delivers them, on a plain connection.
type rawNotes struct{ conn *pgx.Conn }

func rawListener(t *testing.T, pool *pgxpool.Pool) rawNotes {
	t.Helper()
	conn, err := pgx.ConnectConfig(t.Context(), pool.Config().ConnConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), "LISTEN "+pgx.Identifier{taskpg.TasksChannel("public")}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return rawNotes{conn}
}

// until returns the payloads up to and with last.
func (r rawNotes) until(t *testing.T, last string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), notifyPatience)
	defer cancel()
	var payloads []string
	for {
		note, err := r.conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("after %q: %v", payloads, err)
		}
		payloads = append(payloads, note.Payload)
		if note.Payload == last {
			return payloads
		}
	}
}
