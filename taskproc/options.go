package taskproc

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// A TopicOption sets how a topic is run: given to Client.Handle or
// NewManager, that topic's; given to New, every topic's of the Client,
// before the topic's own.
type TopicOption func(*settings)

// A ClientOption sets how a Client runs (New). Every TopicOption is one
// too, as the default of every topic. The options of what a Client has
// once per process (its keeper, heartbeats, Notifier and reconciliation)
// are ClientOptions only: giving one to a topic does not compile.
type ClientOption interface{ applyClient(*settings) }

func (o TopicOption) applyClient(s *settings) { o(s) }

// clientOption is an option of the Client only.
type clientOption func(*settings)

func (o clientOption) applyClient(s *settings) { o(s) }

// settings are what the options set, and the wiring that the runtime adds
// after they ran.
type settings struct {
	size       int
	order      taskapi.Order
	condition  taskapi.Condition
	pause      time.Duration
	limiter    Limiter
	observer   Observer
	logger     *slog.Logger
	grace      time.Duration
	heartbeat  time.Duration
	pollers    int
	expiry     time.Duration
	revival    bool
	purge      time.Duration
	successor  any // func(owner string) (Repository[Tx], error), see WithSuccessor
	notifier   Notifier
	reconcile  time.Duration
	window     time.Duration
	settle     time.Duration // WithSettleWindow's
	leaderTTL  time.Duration // WithLeadership's
	onLead     func(ctx context.Context, term taskapi.Term)
	maxRescues int // how often a task is rescued at most (WithRescues)
	// maxRescuesSet tells a WithRescues from the default, which follows
	// the retry policy.
	maxRescuesSet bool
	retry         RetryPolicy
	now           func() time.Time // WithClock's; nil for the database's clock as estimated
	schedules     []Schedule

	wiring
}

// wiring is what a Client gives each of its Managers, in Handle, after
// the options ran; a Manager alone has the zero wiring but its gate.
type wiring struct {
	resume  func(topics ...string) // wakes local managers after follow-up pushes
	alive   func() bool            // whether the Client's heartbeat is recent enough to claim; nil for a Manager alone
	managed bool                   // the Manager is a Client's
	clock   *clockOffset           // the Client's measure of the database's clock; nil for a Manager alone
	gate    *connGate              // the turns of the handlers' transactions, the Client's or the Manager's own (see pool.go)
}

// Defaults of the options.
const (
	DefaultSize      = 100
	DefaultPause     = time.Second
	DefaultGrace     = 2 * time.Second
	DefaultHeartbeat = 5 * time.Second
	DefaultExpiry    = 30 * time.Second
	DefaultPurge     = 24 * time.Hour
	DefaultReconcile = 10 * time.Second
	DefaultWakeGap   = 2 * time.Millisecond
)

func defaults() settings {
	return settings{
		size: DefaultSize, pause: DefaultPause, limiter: unlimited{},
		grace: DefaultGrace, heartbeat: DefaultHeartbeat, pollers: 1,
		expiry: DefaultExpiry, purge: DefaultPurge, reconcile: DefaultReconcile, window: DefaultWakeGap,
		retry: DefaultRetryPolicy(),
	}
}

// WithSize sets how many tasks a poll takes at most (DefaultSize).
func WithSize(n int) TopicOption { return func(s *settings) { s.size = n } }

// WithOrder sets the order of polls (FIFO by default).
func WithOrder(order taskapi.Order) TopicOption { return func(s *settings) { s.order = order } }

// WithCondition sets the condition of polls (Unconditional by default), for
// instance taskapi.SingularByIdentifier, so that no identifier is processed
// twice at once.
func WithCondition(condition taskapi.Condition) TopicOption {
	return func(s *settings) { s.condition = condition }
}

// WithPause sets how long the loop waits after a poll that found nothing,
// unless it is woken (Resume) first (DefaultPause). It also caps the
// backoff after failed polls.
func WithPause(d time.Duration) TopicOption { return func(s *settings) { s.pause = d } }

// WithLimiter sets the limiter that bounds the batches in flight (none,
// by default; nil too). Give one limiter to several topics to bound them together.
func WithLimiter(l Limiter) TopicOption { return func(s *settings) { s.limiter = l } }

// WithObserver sets the observer that is told of the runtime's events.
func WithObserver(l Observer) TopicOption { return func(s *settings) { s.observer = l } }

// WithLogger sets the logger of the runtime (slog.Default() by default).
func WithLogger(l *slog.Logger) TopicOption { return func(s *settings) { s.logger = l } }

// WithExpiry sets the keeper's timeout (DefaultExpiry): every quarter of it
// (but not more often than it beats), the Client expires the Active tasks
// of other owners silent for longer (on the database clock), and it fences
// itself when no heartbeat of its own was confirmed within the expiry of
// the moment the last confirmed one was sent, or one was confirmed later
// than that (a process stopped with SIGSTOP, a VM paused): see Client.
// Zero turns expiry and fencing off. Choose several heartbeat intervals
// plus the longest pause a live process may take.
// An option of the Client only.
func WithExpiry(d time.Duration) ClientOption {
	return clientOption(func(s *settings) { s.expiry = d })
}

// WithRevival makes the keeper revive the expired tasks of the Client's
// topics whenever it expires (ReviveReset: Ready again, in their place), so
// that the work of crashed processes resumes by itself; a task rescued so
// too often ends with Failure instead (WithRescues). Polls under a
// SingularByIdentifier condition then wait behind an Expired task of the
// identifier as behind an Active one (taskapi.AwaitRevival), so that an
// identifier's order holds across the crash of a process.
// An option of the Client only.
func WithRevival() ClientOption {
	return clientOption(func(s *settings) { s.revival = true })
}

// WithOwnerPurge sets after how long of silence the keeper deletes owners
// that hold no Active task (DefaultPurge), once an hour (or once per that
// duration, when it is shorter); zero never does.
// An option of the Client only.
func WithOwnerPurge(d time.Duration) ClientOption {
	return clientOption(func(s *settings) { s.purge = d })
}

// WithSuccessor gives a Client the identity it continues under after it
// fenced itself: successor gets the name of the new owner (NextOwner of the
// fenced one) and returns its repository. Without it, a Client that
// recovers releases the tasks it gave up and goes on as the same owner.
// An option of the Client only.
func WithSuccessor[Tx any](successor func(owner string) (Repository[Tx], error)) ClientOption {
	return clientOption(func(s *settings) { s.successor = successor })
}

// WithNotifier gives a Client a Notifier (taskpg.NewNotifier on
// PostgreSQL): a push wakes the topic's Manager at once in every process,
// and an activation changed anywhere applies at once. The first
// notification of a topic wakes it at once; the ones that follow within
// WithWakeGap coalesce into one wake-up at its end.
// An option of the Client only.
func WithNotifier(n Notifier) ClientOption {
	return clientOption(func(s *settings) { s.notifier = n })
}

// WithWakeGap sets the window within which notifications of one topic
// coalesce (DefaultWakeGap).
// An option of the Client only.
func WithWakeGap(d time.Duration) ClientOption {
	return clientOption(func(s *settings) { s.window = d })
}

// WithReconcile sets how often a Client reads the topics' activations from
// the database (DefaultReconcile): the bound on how long a change takes to
// reach a process that was not notified.
// An option of the Client only.
func WithReconcile(d time.Duration) ClientOption {
	return clientOption(func(s *settings) { s.reconcile = d })
}

// WithSettleWindow has the completions that a topic's batches write as one
// statement each (a handler's Complete, Buffered's and Parallel's
// decisions; never CompleteTx's or ParallelTx's, which are written in the
// caller's transaction) wait up to d, from the first of them, and be
// written together in one statement: fewer statements per task when
// batches are small, as River's completer does every 250 ms. The price is
// d: a task whose handler returned stays Active in the database for up to
// d longer, and a process that crashes in the window loses the results it
// gathered, whose tasks run again once they expire (a fenced owner writes
// none of them either); a conditional poll takes an identifier's next task
// only once the last one's result is written. A Stop writes the gathered
// results at once, before it returns. Complete returns once its result is
// written; Sequential's and Parallel's handlers hand their decisions over
// and take their next batch meanwhile, with a window or without.
// Zero, the default, waits for nothing: completions still go together
// when they become ready while another is being written. At most
// MaxSettleWindow.
func WithSettleWindow(d time.Duration) TopicOption { return func(s *settings) { s.settle = d } }

// MaxSettleWindow is the longest settlement window (WithSettleWindow).
const MaxSettleWindow = time.Minute

// WithPollers sets how many poll loops a Manager runs (one by default). Each
// acquires its own limiter slot and polls, so that up to n polls of the
// topic are in flight at once and the handler is called from n goroutines:
// it must be safe for that (Sequential, Parallel, Buffered and Composite
// are). More pollers let workers that complete faster than one poll's round
// trip keep busy. A loop of Parallel or ParallelTx has n workers of its
// own, and polls for them as they become free rather than once a batch is
// settled, holding at most WithSize tasks. A Buffered handler's Manager
// runs one more loop, which polls only while full polls meet workers
// waiting for them.
func WithPollers(n int) TopicOption { return func(s *settings) { s.pollers = n } }

// WithGrace sets how long a Stop whose context ended waits, after it
// cancelled the contexts of the batches in flight, before it releases what
// is still unsettled (DefaultGrace).
func WithGrace(d time.Duration) TopicOption { return func(s *settings) { s.grace = d } }

// WithHeartbeat sets how often a Client sends its owner's heartbeat
// (DefaultHeartbeat). Zero sends none, and then needs WithExpiry(0) as
// well: without heartbeats the keeper can neither keep the owner alive in
// the eyes of other processes nor fence it. An option of the Client only.
func WithHeartbeat(d time.Duration) ClientOption {
	return clientOption(func(s *settings) { s.heartbeat = d })
}

// apply applies the Client's options, then the topic's, to the defaults
// and checks the result.
func apply(client []ClientOption, topic []TopicOption) (settings, error) {
	s := defaults()
	for _, opt := range client {
		opt.applyClient(&s)
	}
	for _, opt := range topic {
		opt(&s)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.limiter == nil {
		s.limiter = unlimited{}
	}
	if !s.maxRescuesSet {
		s.maxRescues = s.retry.MaxAttempts
	}
	return s, s.check()
}

func (s settings) check() error {
	switch {
	case s.size < 1:
		return fmt.Errorf("taskproc: size %d is below one: %w", s.size, taskapi.ErrInvalidArgument)
	case s.pollers < 1:
		return fmt.Errorf("taskproc: pollers %d is below one: %w", s.pollers, taskapi.ErrInvalidArgument)
	case s.pause <= 0:
		return fmt.Errorf("taskproc: pause %v is not positive: %w", s.pause, taskapi.ErrInvalidArgument)
	case s.leaderTTL < 0 || (s.leaderTTL > 0 && s.leaderTTL < 3*time.Millisecond):
		return fmt.Errorf("taskproc: leadership term %v: %w", s.leaderTTL, taskapi.ErrInvalidArgument)
	case s.reconcile <= 0 || s.window < 0:
		return fmt.Errorf("taskproc: reconcile %v, wake gap %v: %w", s.reconcile, s.window, taskapi.ErrInvalidArgument)
	case s.maxRescues < 0:
		return fmt.Errorf("taskproc: rescues %d is negative: %w", s.maxRescues, taskapi.ErrInvalidArgument)
	case s.settle < 0 || s.settle > MaxSettleWindow:
		return fmt.Errorf("taskproc: settlement window %v is not within 0 and %v: %w", s.settle, MaxSettleWindow, taskapi.ErrInvalidArgument)
	case s.grace < 0 || s.heartbeat < 0 || s.expiry < 0 || s.purge < 0:
		return fmt.Errorf("taskproc: negative grace, heartbeat, expiry or purge: %w", taskapi.ErrInvalidArgument)
	case s.expiry > 0 && s.heartbeat == 0:
		return fmt.Errorf("taskproc: WithHeartbeat(0) sends no heartbeat, but the expiry (%v) needs them, to keep the owner alive and to fence it: give WithExpiry(0) too, which turns expiry and fencing off: %w", s.expiry, taskapi.ErrInvalidArgument)
	case !s.order.Valid() || !s.condition.Valid():
		return fmt.Errorf("taskproc: order %v, condition %v: %w", s.order, s.condition, taskapi.ErrInvalidArgument)
	}
	return nil
}

// WithClock sets the clock of the runtime's retries, snoozes and schedules,
// for tests that do not wait for real time to pass: the times of retries,
// snoozes and periods are computed with it, and a wait for a time of it
// reads it again every few milliseconds, so that moving it counts at once.
// Without it, they follow the database's clock, as the runtime measures it.
// Deferred tasks become due by the database's clock either way.
func WithClock(now func() time.Time) TopicOption {
	return func(s *settings) {
		if now != nil {
			s.now = now
		}
	}
}
