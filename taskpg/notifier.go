package taskpg

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/taskapi"
)

// NotifierApplicationName is the application_name of a Notifier's
// connection, as pg_stat_activity shows it.
const NotifierApplicationName = "taskrepo-notifier"

// The defaults of a Notifier, and the bounds of its connection's set-up and
// farewell.
const (
	defaultPingInterval = 5 * time.Second
	defaultFirstBackoff = 10 * time.Millisecond
	defaultMaxBackoff   = 5 * time.Second
	connectTimeout      = 10 * time.Second
	closeTimeout        = time.Second
	// deafRetry is the wait before a Notifier whose connection heard
	// nothing (ErrNotListening) connects again.
	deafRetry = time.Minute
	// maxDrain bounds the notifications handed over in one call.
	maxDrain = 1000
)

// A Notifier listens on PostgreSQL for the notifications of pushes
// (TasksChannel, DueChannel) and of activation changes, on a connection of
// its own, and
// hands them to the consumer runtime: it implements taskproc.Notifier. Make
// one per process, on the pool of the repository.
type Notifier struct {
	pool *pgxpool.Pool
	s    notifierSettings
}

// NotifierOption configures a Notifier.
type NotifierOption func(*notifierSettings)

type notifierSettings struct {
	schema      string
	listenURL   string // empty: the pool's configuration
	ping        time.Duration
	first, most time.Duration // the backoff between connections
}

// ErrNotListening says that the probe notification that a Notifier sends
// through the pool when it connects did not reach its connection within
// the ping interval, though the connection answers: most likely a pooler in transaction mode (PgBouncer)
// stands between it and PostgreSQL, where LISTEN holds for one transaction
// only. Listen reports it once, through lost, and tries again every minute;
// meanwhile the runtime finds new tasks by polling. WithListenURL gives the
// Notifier a connection that keeps its LISTEN: direct, or through a pooler
// in session mode.
var ErrNotListening = errors.New("taskpg: notifications do not reach the Notifier's connection " +
	"(a pooler in transaction mode? give it a direct or session-pooled URL, WithListenURL)")

// WithListenURL makes the Notifier connect to url (a PostgreSQL URL or DSN,
// as pgx parses it) instead of with the configuration of the pool's
// connections: the way past a pooler in transaction mode, which the pool
// may go through, since LISTEN needs a connection of its own to the server
// (docs/operating.md). The probes (see ErrNotListening) still go through
// the pool, so that the two are known to reach the same server.
func WithListenURL(url string) NotifierOption {
	return func(s *notifierSettings) { s.listenURL = url }
}

// WithNotifierSchema names the schema whose channels the Notifier listens
// on ("public" by default), the schema of the repositories that push.
func WithNotifierSchema(name string) NotifierOption {
	return func(s *notifierSettings) { s.schema = name }
}

// WithPingInterval sets how long the connection may stay silent before
// the Notifier pings the server to make sure that it is still there (5 s
// by default). A ping that fails, or takes longer than this, counts as a
// lost connection.
func WithPingInterval(d time.Duration) NotifierOption {
	return func(s *notifierSettings) {
		if d > 0 {
			s.ping = d
		}
	}
}

// WithReconnectBackoff sets the wait before connecting again after an
// error: first (10 ms by default), doubled after every failure up to most
// (5 s by default), each wait between half and all of it at random.
func WithReconnectBackoff(first, most time.Duration) NotifierOption {
	return func(s *notifierSettings) {
		if first > 0 {
			s.first, s.most = first, max(first, most)
		}
	}
}

// NewNotifier returns a Notifier that connects with the configuration of
// pool's connections (but none of the pool's hooks), on a connection of
// its own that it opens, never one taken from pool.
func NewNotifier(pool *pgxpool.Pool, opts ...NotifierOption) *Notifier {
	s := notifierSettings{schema: "public", ping: defaultPingInterval, first: defaultFirstBackoff, most: defaultMaxBackoff}
	for _, opt := range opts {
		opt(&s)
	}
	return &Notifier{pool: pool, s: s}
}

// Listen listens until ctx ends, then closes its connection and returns
// ctx.Err(). It calls wake with the topics whose pushes of ready tasks
// committed, deferred with the topics whose pushes of deferred tasks
// committed, and activated with the topics whose activation changed, as
// they come; those already received when it hands one over go with it,
// each topic once, the activation changes first. Whenever it starts
// listening (at first and after every reconnection) it calls
// activated(nil), deferred(nil) and wake(nil): what was sent before was
// missed, and nil stands for every topic. An
// activation notification without a topic stands for every topic too. On
// any error of its connection it calls lost with the error, closes the
// connection and connects again after a backoff; a connection that hears
// nothing is told once (ErrNotListening). The callbacks run on
// Listen's goroutine; nil ones are skipped. It fails at once, with
// taskapi.ErrInvalidArgument, only for an invalid schema or listen URL.
func (n *Notifier) Listen(ctx context.Context, wake, deferred, activated func(topics []string), lost func(err error)) error {
	if err := checkSchema(n.s.schema); err != nil {
		return fmt.Errorf("taskpg: listen: %w", err)
	}
	if n.s.listenURL != "" {
		if _, err := pgx.ParseConfig(n.s.listenURL); err != nil {
			return fmt.Errorf("taskpg: listen: the listen URL: %w: %w", taskapi.ErrInvalidArgument, err)
		}
	}
	h := handlers{wake: wake, deferred: deferred, activated: activated, lost: lost}
	backoff, deaf := n.s.first, false
	for {
		lasted, err := n.session(ctx, h)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wasDeaf := deaf
		deaf = errors.Is(err, ErrNotListening)
		if !deaf || !wasDeaf { // a deaf connection is told once, until it hears again
			h.lose(fmt.Errorf("taskpg: listen: %w", err))
		}
		if lasted >= n.s.most { // it was a connection that worked: start over
			backoff = n.s.first
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		if deaf {
			wait = deafRetry
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
		backoff = min(2*backoff, n.s.most)
	}
}

// session connects, listens and hands notifications over until an error
// or the end of ctx. It returns how long it listened.
func (n *Notifier) session(ctx context.Context, h handlers) (time.Duration, error) {
	probe := probeChannel()
	conn, err := n.connect(ctx, probe)
	if err != nil {
		return 0, err
	}
	defer func() {
		end, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		_ = conn.Close(end) // the connection is done with, whatever the error
	}()
	start := time.Now()
	h.everything()
	err = n.receive(ctx, conn, h, probe)
	return time.Since(start), err
}

// connect opens the Notifier's connection and listens on its channels and
// on probe.
func (n *Notifier) connect(ctx context.Context, probe string) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cfg := n.pool.Config().ConnConfig // a copy
	if n.s.listenURL != "" {
		var err error
		if cfg, err = pgx.ParseConfig(n.s.listenURL); err != nil {
			return nil, fmt.Errorf("the listen URL: %w", err)
		}
	}
	cfg.RuntimeParams["application_name"] = NotifierApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	listen := "LISTEN " + pgx.Identifier{TasksChannel(n.s.schema)}.Sanitize() +
		"; LISTEN " + pgx.Identifier{DueChannel(n.s.schema)}.Sanitize() +
		"; LISTEN " + pgx.Identifier{activationChannel(n.s.schema)}.Sanitize() +
		"; LISTEN " + pgx.Identifier{probe}.Sanitize()
	if _, err := conn.PgConn().Exec(ctx, listen).ReadAll(); err != nil {
		_ = conn.Close(ctx)
		return nil, fmt.Errorf("listen: %w", err)
	}
	return conn, nil
}

// receive waits for notifications and hands them over until an error or
// the end of ctx, and pings the server whenever the connection stays
// silent for the ping interval. At first it sends a probe, a notification
// on the channel probe, through the pool: a probe that has not come back
// when the connection first falls silent ends the session with
// ErrNotListening. Once per session is enough: a pooler comes between
// only with a new connection, and costs an idle process no statement.
func (n *Notifier) receive(ctx context.Context, conn *pgx.Conn, h handlers, probe string) error {
	c := channels{tasks: TasksChannel(n.s.schema), due: DueChannel(n.s.schema), activation: activationChannel(n.s.schema)}
	awaiting := n.sendProbe(ctx, probe)
	for {
		wait, cancel := context.WithTimeout(ctx, n.s.ping)
		note, err := conn.WaitForNotification(wait)
		silent := wait.Err() == context.DeadlineExceeded
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			notes, err := drain(conn, note)
			awaiting = awaiting && !heard(notes, probe)
			h.hand(notes, c)
			if err != nil {
				return err
			}
		case silent:
			if err := n.ping(ctx, conn); err != nil {
				return err
			}
			if awaiting {
				return ErrNotListening
			}
		default:
			return err
		}
	}
}

// probeChannel returns the name of a session's probe channel, its own.
func probeChannel() string {
	return "taskrepo_probe_" + strings.ToLower(cryptorand.Text())
}

// sendProbe notifies probe through the pool, and reports whether it did:
// a pool that fails proves nothing about the Notifier's connection.
func (n *Notifier) sendProbe(ctx context.Context, probe string) bool {
	ctx, cancel := context.WithTimeout(ctx, n.s.ping)
	defer cancel()
	_, err := n.pool.Exec(ctx, "SELECT pg_notify($1, '')", probe)
	return err == nil
}

// heard reports whether notes hold one on channel.
func heard(notes []*pgconn.Notification, channel string) bool {
	for _, note := range notes {
		if note.Channel == channel {
			return true
		}
	}
	return false
}

// ping makes sure that the server still answers within the ping interval.
func (n *Notifier) ping(ctx context.Context, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, n.s.ping)
	defer cancel()
	if err := conn.PgConn().Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// drain returns first with the notifications that have arrived already,
// without waiting for more: those that pgx has buffered, and those in the
// bytes read from the socket. A read deadline in the past makes the read
// that would wait fail at once with a timeout, which leaves the connection
// as it was (pgx's own cancellation works the same way).
func drain(conn *pgx.Conn, first *pgconn.Notification) ([]*pgconn.Notification, error) {
	notes := []*pgconn.Notification{first}
	socket := conn.PgConn().Conn()
	if err := socket.SetReadDeadline(time.Unix(1, 0)); err != nil {
		return notes, err
	}
	for len(notes) < maxDrain {
		note, err := conn.WaitForNotification(context.Background())
		if err != nil {
			if !pgconn.Timeout(err) {
				return notes, err
			}
			break
		}
		notes = append(notes, note)
	}
	return notes, socket.SetReadDeadline(time.Time{})
}

// sleep waits for d or the end of ctx, and reports whether ctx goes on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// handlers are the callbacks of Listen.
type handlers struct {
	wake, deferred, activated func(topics []string)
	lost                      func(err error)
}

// channels are the names of the channels a Notifier listens on.
type channels struct{ tasks, due, activation string }

// lose reports an error that Listen recovers from.
func (h handlers) lose(err error) {
	if h.lost != nil {
		h.lost(err)
	}
}

// everything tells that every topic may have got tasks or changed.
func (h handlers) everything() {
	send(h.activated, nil)
	send(h.deferred, nil)
	send(h.wake, nil)
}

// hand hands notes over, the activation changes first, each topic once.
func (h handlers) hand(notes []*pgconn.Notification, c channels) {
	var pushed, due, changed topicSet
	for _, note := range notes {
		switch note.Channel {
		case c.tasks:
			pushed.add(note.Payload)
		case c.due:
			due.add(note.Payload)
		case c.activation:
			changed.add(note.Payload)
		}
	}
	if changed.any {
		send(h.activated, changed.list())
	}
	if due.any {
		send(h.deferred, due.list())
	}
	if pushed.any {
		send(h.wake, pushed.list())
	}
}

// send calls fn with topics unless fn is nil.
func send(fn func([]string), topics []string) {
	if fn != nil {
		fn(topics)
	}
}

// topicSet gathers the distinct topics of notifications in the order they
// came; an empty payload stands for every topic.
type topicSet struct {
	topics []string
	seen   map[string]bool
	any    bool // a notification came
	all    bool // one stood for every topic
}

func (s *topicSet) add(topic string) {
	s.any = true
	if topic == "" {
		s.all = true
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if !s.seen[topic] {
		s.seen[topic] = true
		s.topics = append(s.topics, topic)
	}
}

// list returns the topics, nil for every topic.
func (s *topicSet) list() []string {
	if s.all {
		return nil
	}
	return s.topics
}
