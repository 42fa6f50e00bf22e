package taskpg_test

import (
	"errors"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// A Notifier on a pool through a pooler in transaction mode hears nothing
// (its LISTEN holds for one transaction): it says so once, with
// ErrNotListening, instead of listening in silence.
func TestNotifierThroughATransactionPoolerSaysItHearsNothing(t *testing.T) {
	t.Parallel()
	pool := testdb.Pool(t, testdb.PgBouncerURL(t, testdb.PostgresURL(t)), 4)
	h := listen(t, pool, taskpg.WithPingInterval(200*time.Millisecond))
	if err := receive(t, h.losses, "lost"); !errors.Is(err, taskpg.ErrNotListening) {
		t.Fatalf("lost(%v), want ErrNotListening", err)
	}
	// It tries again a minute later, and tells nothing more until it hears.
	select {
	case err := <-h.losses:
		t.Fatalf("lost(%v) after ErrNotListening", err)
	case <-time.After(2 * time.Second):
	}
}

// WithListenURL takes the Notifier past the pooler: pushes through the
// pooler wake their topic, and every probe comes back.
func TestNotifierWithAListenURLHearsPushesThroughAPooler(t *testing.T) {
	t.Parallel()
	direct := testdb.PostgresURL(t)
	pool := testdb.Pool(t, testdb.PgBouncerURL(t, direct), 4)
	repo := newRepo(t, pool, "a")
	if _, err := repo.Initialize(t.Context(), pool, "bounced"); err != nil {
		t.Fatal(err)
	}
	h := listen(t, pool, taskpg.WithPingInterval(200*time.Millisecond), taskpg.WithListenURL(direct))
	time.Sleep(time.Second) // the probe is heard, and the connection falls silent a few times
	push(t, repo, pool, "bounced", taskapi.Append, ids("a")...)
	h.expect(t, "bounced")
	select {
	case err := <-h.losses:
		t.Fatalf("lost(%v) with a listen URL", err)
	default:
	}
}

// A listen URL that pgx cannot parse fails Listen at once.
func TestNotifierRefusesABadListenURL(t *testing.T) {
	t.Parallel()
	err := taskpg.NewNotifier(testdb.Postgres(t), taskpg.WithListenURL("postgres://%zz")).
		Listen(t.Context(), nil, nil, nil, nil)
	if !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Fatalf("Listen = %v, want ErrInvalidArgument", err)
	}
}
