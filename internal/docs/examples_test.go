package docs_test

// The functions below hold the Go code blocks of README.md and docs/*.md,
// each as it is written there, with what it needs declared around it.
// They are compiled, not run: TestGoBlocksCompile checks that every block
// is found here. Change a block in both places.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // pure Go, no cgo

	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
	"github.com/taskrepo/taskrepo/taskproc"
)

// Placeholders of the caller's own code that the blocks call.
var (
	sendInvoice = func(ctx context.Context, key, input string) error { return nil }
	process     = func(task taskapi.Task) taskapi.Decision { return taskapi.Decision{Result: taskapi.Success} }
	ownerName   = func() string { return "worker-1" }
	parseAll    = func(ctx context.Context, tasks []taskapi.Task, s *taskproc.Supplement) (taskproc.Outcomes, error) {
		return nil, nil
	}
	chargeOne = func(ctx context.Context, task taskapi.Task, s *taskproc.Supplement) (taskproc.Outcome, error) {
		return taskproc.Outcome{}, nil
	}
	notifyOne = chargeOne
)

func readmeSetup(ctx context.Context, databaseURL string) error {
	pool, err := pgxpool.New(ctx, databaseURL)
	// Bring the schema up to date; safe to run from every process at start-up.
	err = migrations.Up(ctx, stdlib.OpenDBFromPool(pool), migrations.Postgres)

	repo, err := taskpg.New("billing-worker-1") // one Repository value per process; its name is the owner taskproc registers
	_, err = repo.Initialize(ctx, pool, "invoices")
	return err
}

func readmeProduce(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, orderID string, total int, payload, customerID string) error {
	tx, err := pool.Begin(ctx)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, "INSERT INTO orders (id, total) VALUES ($1, $2)", orderID, total)
	_, err = repo.Push(ctx, tx, "invoices", taskapi.Append,
		taskapi.Creation{Identifier: orderID, Input: payload, Reference: customerID})
	err = tx.Commit(ctx)
	return err
}

// main is README's whole consumer service.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns = 12 // ParallelTx's 8 functions hold one each, the runtime keeps 2 (docs/operating.md#the-pool)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	host, _ := os.Hostname()
	repo, err := taskpg.New("billing-" + host) // one owner per process
	if err != nil {
		log.Fatal(err)
	}
	client, err := taskproc.New(repo, taskpg.Transact(pool)) // registers and heartbeats the owner
	if err != nil {
		log.Fatal(err)
	}
	// Each task in a transaction of its own: the row it writes commits with
	// its result, exactly once, even when connections break under it.
	err = client.Handle("invoices", taskproc.ParallelTx(8, func(ctx context.Context, tx taskpg.DB, task taskapi.Task) (taskapi.Decision, error) {
		if _, err := tx.Exec(ctx, "INSERT INTO invoices_sent (order_id) VALUES ($1)", task.Identifier); err != nil {
			return taskapi.Decision{}, err // rolled back; the task fails (return taskproc.Transient(err) to retry it)
		}
		// The function runs again when its transaction did not commit: the
		// mail service gets the same key each run, and sends one invoice.
		return taskapi.Decision{Result: taskapi.Success}, sendInvoice(ctx, task.Key(), task.Input) // an error fails the task, and rolls the row back
	}), taskproc.WithSize(100), taskproc.WithCondition(taskapi.SingularByIdentifier))
	if err == nil {
		err = client.Start(ctx)
	}
	if err != nil {
		log.Fatal(err)
	}
	<-ctx.Done() // SIGTERM: polling stops, the batches in flight finish
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.Stop(shutdown); err != nil { // after 30 s: interrupted tasks go back to Ready
		log.Print(err)
	}
}

func readmeByHand(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	tasks, err := repo.Poll(ctx, pool, "invoices", 100, taskapi.SingularByIdentifier)
	done := make([]taskapi.Completion, len(tasks))
	for i, task := range tasks {
		done[i] = taskapi.Completion{Task: task, Decision: process(task)}
	}
	err = repo.Complete(ctx, pool, "invoices", done...)
	return err
}

func readmeOperator(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	// Every completed, recreated or redundant task created a week ago or earlier.
	purged, err := repo.PurgeBefore(ctx, pool, "invoices", time.Now().Add(-7*24*time.Hour))
	// Tasks of consumers silent for a minute become Expired; revive them as new tasks.
	expired, err := repo.Expire(ctx, pool, time.Minute)
	revived, err := repo.Revive(ctx, pool, "invoices", taskapi.ReviveAppend, taskapi.Expired, taskapi.Unbounded, 1000)
	counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	_, _, _, _ = purged, expired, revived, counts
	return err
}

func backendsSQLite(ctx context.Context, orderID string) error {
	db, err := sql.Open("sqlite", "file:tasks.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	err = migrations.Up(ctx, db, migrations.SQLite)
	repo, err := taskansi.New(taskansi.SQLite, "worker-1") // or taskansi.Postgres, taskansi.MySQL
	_, err = repo.Register(ctx, db)
	tx, err := db.BeginTx(ctx, nil)
	_, err = repo.Push(ctx, tx, "invoices", taskapi.Append, taskapi.Creation{Identifier: orderID})
	err = tx.Commit()
	return err
}

func backendsPostgres(ctx context.Context) (*taskansi.Repository, error) {
	db, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	err = migrations.Up(ctx, db, migrations.Postgres)
	repo, err := taskansi.New(taskansi.Postgres, "worker-1")
	return repo, err
}

func backendsPgBouncer() (*sql.DB, error) {
	db, err := sql.Open("pgx", "postgres://…/tasks?default_query_exec_mode=exec")
	return db, err
}

func backendsSQLiteOpen(ctx context.Context) (*taskansi.Repository, error) {
	db, err := sql.Open("sqlite", "file:tasks.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	err = migrations.Up(ctx, db, migrations.SQLite)
	repo, err := taskansi.New(taskansi.SQLite, "worker-1")
	return repo, err
}

func backendsMySQL(ctx context.Context) (*taskansi.Repository, error) {
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/tasks?parseTime=true")
	err = migrations.Up(ctx, db, migrations.MySQL)
	repo, err := taskansi.New(taskansi.MySQL, "worker-1")
	return repo, err
}

func manyProcessesClient(pool *pgxpool.Pool) (*taskproc.Client[taskpg.DB], error) {
	repo, err := taskpg.New(ownerName()) // host and pid, say: unique per process
	client, err := taskproc.New(repo, taskpg.Transact(pool),
		taskproc.WithNotifier(taskpg.NewNotifier(pool)), // wake-ups, activation at once
		taskproc.WithPause(5*time.Second),               // polling is now only the fallback
		taskproc.WithRevival(),                          // crashed work resumes by itself
		taskproc.WithSuccessor(func(owner string) (taskproc.Repository[taskpg.DB], error) {
			return taskpg.New(owner)
		}),
	)
	return client, err
}

func modelStateError(err error) {
	var stale *taskapi.StateError
	if errors.As(err, &stale) {
		// stale.Sequences are not Active and owned by this owner any more
	}
}

func modelCapacity(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, creation taskapi.Creation) {
	_, err := repo.Push(ctx, pool, "tenant-acme", taskapi.Append, creation)
	var full *taskapi.CapacityError
	if errors.As(err, &full) {
		// full.Topic holds full.Capacity READY tasks: answer 429 and let the caller retry
	}
}

func modelLimits(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	limits := taskapi.Limits{Active: 50, PerIdentifier: 2} // identifier = tenant
	if err := repo.SetLimits(ctx, pool, "reports", limits); err != nil {
		return err
	}
	return nil
}

// errTryLater is the caller's answer to a tenant whose queue is full.
var errTryLater = errors.New("try again later")

func tenantsTopic(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, tenant string) error {
	topic := "reports-" + tenant
	if _, err := repo.Initialize(ctx, pool, topic); err != nil {
		return err
	}
	if err := repo.SetCapacity(ctx, pool, topic, taskapi.Capacity{Ready: 10_000}); err != nil { // at most 10,000 waiting
		return err
	}
	return repo.SetLimits(ctx, pool, topic, taskapi.Limits{Active: 4}) // 4 at once, fleet-wide
}

func tenantsKey(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, tenant, request string) error {
	limits := taskapi.Limits{Active: 50, PerIdentifier: 2} // 2 per tenant, 50 in all
	if err := repo.SetLimits(ctx, pool, "reports", limits); err != nil {
		return err
	}
	_, err := repo.Push(ctx, pool, "reports", taskapi.Append, taskapi.Creation{Identifier: tenant, Input: request})
	return err
}

func tenantsFull(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, topic string, creation taskapi.Creation) error {
	_, err := repo.Push(ctx, pool, topic, taskapi.Append, creation)
	var full *taskapi.CapacityError
	if errors.As(err, &full) {
		return errTryLater // full.Capacity reports wait already: answer 429
	}
	return err
}

func modelCancel(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, tenant string) error {
	cancelled, err := repo.CancelIdentifier(ctx, pool, "reports", tenant, "the caller went away")
	if err != nil {
		return err
	}
	log.Printf("cancelled %d waiting tasks of %s", len(cancelled), tenant)
	return nil
}

// render is the tenant's work, which gives up when its context ends.
var render = func(ctx context.Context, input string) (string, error) { return input, ctx.Err() }

func tenantsCancel(caller context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, tenant, request string) error {
	tasks, err := repo.Push(caller, pool, "reports", taskapi.Append, taskapi.Creation{Identifier: tenant, Input: request})
	if err != nil {
		return err
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C: // has the task ended?
			info, _, err := repo.Lookup(caller, pool, "reports", tasks[0].Sequence)
			if err != nil || info.State.Completed() {
				return err // the report is done: its output says how
			}
		case <-caller.Done(): // waiting or running, the work stops
			_, err := repo.Cancel(context.WithoutCancel(caller), pool, "reports", "the caller went away", tasks[0].Sequence)
			return err
		}
	}
}

func tenantsCancelTells(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository, sequences []int64) error {
	cancelled, err := repo.Cancel(ctx, pool, "reports", "", sequences...)
	if err != nil {
		return err
	}
	if len(cancelled) < len(sequences) {
		// the others had ended already, or are not tasks of the topic
	}
	return nil
}

func tenantsCancelled() taskproc.Handler {
	handler := taskproc.Sequential(func(ctx context.Context, task taskapi.Task) (taskapi.Decision, error) {
		report, err := render(ctx, task.Input) // gives up when ctx ends
		if errors.Is(context.Cause(ctx), taskapi.ErrCancelled) {
			return taskapi.Decision{}, err // not written: the task stays CANCELLED
		}
		return taskapi.Decision{Result: taskapi.Success, Output: report}, err
	})
	return handler
}

func tenantsAnyOrder(client *taskproc.Client[taskpg.DB], render taskproc.TaskTxFunc[taskpg.DB]) error {
	handler := taskproc.ParallelTx(8, render, taskproc.AnyOrder())
	if err := client.Handle("reports", handler); err != nil {
		return err
	}
	return nil
}

func processingComposite() (taskproc.Handler, error) {
	amounts := taskproc.NewKey[map[string]int]("amounts")
	steps := taskproc.NewComposite[taskpg.DB]().
		Deduplicate(taskproc.KeepNewest).   // older tasks of an identifier in the batch end Filter
		Step("parse", parseAll).            // func(ctx, tasks, supplement) (taskproc.Outcomes, error)
		Each("charge", chargeOne, "parse"). // func(ctx, task, supplement) (taskproc.Outcome, error)
		Each("notify", notifyOne, "parse"). // runs beside "charge"
		Context(func(ctx context.Context, tx taskpg.DB, c *taskproc.Completing) error {
			for _, task := range c.Tasks() { // pushed only for tasks that end Success
				if err := c.PushTagged(task, "receipts", taskapi.Append, taskapi.Creation{Identifier: task.Identifier}); err != nil {
					return err
				}
			}
			return nil
		})
	handler, err := steps.Handler() // an unknown dependency or a name used twice is an error here
	_ = amounts
	return handler, err
}

func processingRetry() {
	taskproc.WithRetry(taskproc.RetryPolicy{
		MaxAttempts: 25,
		Backoff:     func(attempt int) time.Duration { return time.Duration(attempt*attempt) * time.Second },
	})
}

func processingSchedule(berlin *time.Location) {
	taskproc.WithSchedule(taskproc.Schedule{
		Name: "nightly-report",
		Cron: "0 2 * * *", Location: berlin, // or Every: 10 * time.Minute
		Task:    taskapi.Creation{Identifier: "report", Input: `{"kind":"daily"}`},
		CatchUp: 0, // the default: after downtime, only the current period
	})
}

// One topic for every tenant, the tenant as the identifier of its tasks.
func setupReports(ctx context.Context, pool *pgxpool.Pool, repo *taskpg.Repository) error {
	if _, err := repo.Initialize(ctx, pool, "reports"); err != nil {
		return err
	}
	// 8 reports rendered at once across the fleet, 2 of one tenant.
	if err := repo.SetLimits(ctx, pool, "reports", taskapi.Limits{Active: 8, PerIdentifier: 2}); err != nil {
		return err
	}
	// At most 50 reports waiting per tenant, however many tenants.
	return repo.SetCapacity(ctx, pool, "reports", taskapi.Capacity{PerIdentifier: 50})
}

// submitReport answers 429 to a tenant whose reports fill its bound, and
// only to that tenant.
func submitReport(repo *taskpg.Repository, pool *pgxpool.Pool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get("X-Tenant")
		_, err := repo.Push(r.Context(), pool, "reports", taskapi.Append,
			taskapi.Creation{Identifier: tenant, Input: r.URL.Query().Get("report")})
		var full *taskapi.CapacityError
		switch {
		case errors.As(err, &full) && full.Identifier != "":
			w.Header().Set("Retry-After", "30")
			http.Error(w, fmt.Sprintf("%d reports of %s are waiting already", full.Capacity, full.Identifier),
				http.StatusTooManyRequests)
		case err != nil:
			http.Error(w, "try again later", http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}
}
