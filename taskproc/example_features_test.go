package taskproc_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskproc"
)

// exampleClient returns a Client of owner on db, with the topics
// initialized, and its repository.
func exampleClient(db *sql.DB, owner string, opts []taskproc.ClientOption, topics ...string) (*taskproc.Client[taskansi.DB], *taskansi.Repository) {
	repo, err := taskansi.New(taskansi.SQLite, owner)
	if err != nil {
		log.Fatal(err)
	}
	for _, topic := range topics {
		if _, err := repo.Initialize(context.Background(), db, topic); err != nil {
			log.Fatal(err)
		}
	}
	client, err := taskproc.New(repo, taskansi.Transact(db, nil), opts...)
	if err != nil {
		log.Fatal(err)
	}
	return client, repo
}

// stop stops client within 30 seconds.
func stop(client interface{ Stop(context.Context) error }) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
}

// runUntil starts client, waits for n values on done, and stops it.
func runUntil(client *taskproc.Client[taskansi.DB], done <-chan struct{}, n int) {
	if err := client.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
	for range n {
		<-done
	}
	stop(client)
}

// Buffered lets the loop poll the next batch while workers still run the
// last ones: here up to four batches wait in the buffer for two workers.
// When the Manager stops, the batches left in the buffer go back to Ready
// (ReleaseOnClose) instead of being dropped.
func ExampleBuffered() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	client, repo := exampleClient(db, "resizer", nil, "images")
	ctx := context.Background()

	var mu sync.Mutex
	var resized []string
	done := make(chan struct{}, 6)
	resize := taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		mu.Lock()
		resized = append(resized, task.Identifier)
		mu.Unlock()
		done <- struct{}{}
		return taskapi.Decision{Result: taskapi.Success}, nil
	})
	err := client.Handle("images", taskproc.Buffered(4, 2, resize, taskproc.ReleaseOnClose), taskproc.WithSize(2))
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"a.png", "b.png", "c.png", "d.png", "e.png", "f.png"} {
		_, _ = repo.Push(ctx, db, "images", taskapi.Append, taskapi.Creation{Identifier: id})
	}
	runUntil(client, done, 6)
	slices.Sort(resized) // the workers ran side by side, in any order
	fmt.Println(resized)
	// Output:
	// [a.png b.png c.png d.png e.png f.png]
}

// One limiter given to several topics bounds their batches together: with
// NewBoundedLimiter(1), the batches of "invoices" and "reminders" run one
// at a time, as a connection-hungry handler may need. NewPriorityLimiter
// serves the topics by priority instead, and NewTopicLimiter bounds each
// topic on its own.
func ExampleNewBoundedLimiter() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	client, repo := exampleClient(db, "billing", nil, "invoices", "reminders")
	ctx := context.Background()

	var running, most atomic.Int32
	done := make(chan struct{}, 8)
	handler := taskproc.HandlerFunc(func(ctx context.Context, b *taskproc.Batch) error {
		now := running.Add(1)
		for old := most.Load(); now > old && !most.CompareAndSwap(old, now); old = most.Load() {
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		decisions := taskproc.Decisions{}
		for _, task := range b.Tasks() {
			decisions[task] = taskapi.Decision{Result: taskapi.Success}
			done <- struct{}{}
		}
		return b.Complete(decisions)
	})
	limiter := taskproc.NewBoundedLimiter(1)
	for _, topic := range []string{"invoices", "reminders"} {
		if err := client.Handle(topic, handler, taskproc.WithLimiter(limiter), taskproc.WithSize(1)); err != nil {
			log.Fatal(err)
		}
		for i := range 4 {
			_, _ = repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: fmt.Sprint(topic, i)})
		}
	}
	runUntil(client, done, 8)
	fmt.Println("batches at once, at most:", most.Load())
	// Output:
	// batches at once, at most: 1
}

// With WithLeadership, of all the processes that handle a topic only the
// one that leads it polls; another takes over once the leader is gone.
// Here two Clients, as two processes would, share one database: one of
// them leads "reports" and runs its task.
func ExampleWithLeadership() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	ctx := context.Background()

	ran := make(chan string, 1)
	var clients []*taskproc.Client[taskansi.DB]
	var repo *taskansi.Repository
	for _, owner := range []string{"reporter-1", "reporter-2"} {
		client, r := exampleClient(db, owner, nil, "reports")
		repo = r
		err := client.Handle("reports", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
			ran <- owner
			return taskapi.Decision{Result: taskapi.Success}, nil
		}), taskproc.WithLeadership(3*time.Second))
		if err != nil {
			log.Fatal(err)
		}
		if err := client.Start(ctx); err != nil {
			log.Fatal(err)
		}
		clients = append(clients, client)
	}
	_, _ = repo.Push(ctx, db, "reports", taskapi.Append, taskapi.Creation{Identifier: "daily"})
	owner := <-ran
	leaders := 0
	for _, client := range clients {
		if client.Manager("reports").Leading() {
			leaders++
			fmt.Println("the task ran on the leader:", client.Owner() == owner)
		}
	}
	for _, client := range clients {
		stop(client)
	}
	fmt.Println("leaders:", leaders)
	// Output:
	// the task ran on the leader: true
	// leaders: 1
}

// Snooze gives a task back for a while without counting an attempt: "not
// now", for a task whose turn has not come (a rate limit, a resource still
// busy). The task runs again once it is due.
func ExampleSnooze() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	db := openExample(dir)
	defer db.Close()
	client, repo := exampleClient(db, "mailer", nil, "mail")
	ctx := context.Background()

	done := make(chan struct{})
	var runs atomic.Int32
	err := client.Handle("mail", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		if runs.Add(1) == 1 {
			fmt.Println("run 1: the mail server asks us to wait")
			return taskapi.Decision{}, taskproc.Snooze(50 * time.Millisecond)
		}
		fmt.Println("run 2: sent")
		close(done)
		return taskapi.Decision{Result: taskapi.Success, Output: "sent"}, nil
	}), taskproc.WithPause(10*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = repo.Push(ctx, db, "mail", taskapi.Append, taskapi.Creation{Identifier: "user-42"})
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-done
	stop(client)
	// Output:
	// run 1: the mail server asks us to wait
	// run 2: sent
}

// localNotifier is a Notifier within one process: Push hands the topics to
// the Client at once. taskpg.NewNotifier does this across processes with
// PostgreSQL's LISTEN and NOTIFY.
type localNotifier struct{ pushed chan string }

// Listen calls wake with each topic pushed until ctx ends.
func (n localNotifier) Listen(ctx context.Context, wake, deferred, activated func(topics []string), lost func(err error)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case topic := <-n.pushed:
			wake([]string{topic})
		}
	}
}

// A Notifier wakes a Client as soon as a topic gets tasks, so that its
// Managers need not poll often: here the pause between polls is an hour,
// and the task runs at once all the same.
func ExampleWithNotifier() {
	dir, _ := os.MkdirTemp("", "taskproc-example")
	defer os.RemoveAll(dir)
	notifier := localNotifier{pushed: make(chan string, 1)}
	db := openExample(dir)
	defer db.Close()
	client, repo := exampleClient(db, "mailer", []taskproc.ClientOption{taskproc.WithNotifier(notifier)}, "mail")
	ctx := context.Background()

	done := make(chan struct{})
	err := client.Handle("mail", taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		fmt.Println("sending", task.Input)
		close(done)
		return taskapi.Decision{Result: taskapi.Success}, nil
	}), taskproc.WithPause(time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	_, _ = repo.Push(ctx, db, "mail", taskapi.Append, taskapi.Creation{Identifier: "user-42", Input: "welcome"})
	notifier.pushed <- "mail"
	<-done
	stop(client)
	// Output:
	// sending welcome
}
