package integration_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskrepo/taskrepo/internal/testkit/conformance"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskansi"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// mysqlGrants are the rights README lists for an application user on MySQL
// and MariaDB; {db} is the database.
var mysqlGrants = []string{
	"GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.task TO {user}",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.task_topic TO {user}",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.task_owner TO {user}",
	"GRANT SELECT, UPDATE ON {db}.task_lock TO {user}",
	"GRANT SELECT, INSERT, UPDATE ON {db}.task_activation TO {user}",
	"GRANT SELECT, INSERT, UPDATE ON {db}.task_leader TO {user}",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON {db}.task_schedule TO {user}",
	"GRANT SELECT, INSERT ON {db}.task_audit TO {user}",
}

// TestTaskansiMySQLApplicationUser runs every call as a user with the grants
// README lists and nothing more, on a database that the administrator
// migrated.
func TestTaskansiMySQLApplicationUser(t *testing.T) {
	t.Parallel()
	everyCall(t, ansiBackend(taskansi.MySQL, nil), taskansi.DB(mysqlApplicationDB(t)))
}

// mysqlApplicationDB migrates a fresh MySQL database as the administrator,
// creates a user with the grants README lists on it, and returns a handle
// that logs in as that user, closed when t ends.
func mysqlApplicationDB(t *testing.T) *sql.DB {
	ctx := t.Context()
	admin := testdb.MySQLConfig(t)
	adminDB, err := sql.Open("mysql", admin.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer adminDB.Close()
	if err := migrations.Up(ctx, adminDB, migrations.MySQL); err != nil {
		t.Fatal(err)
	}
	return openMySQL(t, mysqlApplicationUser(t, testdb.MySQLAdminExec, admin, ""))
}

// mysqlApplicationUser creates a user of the test's own with the grants
// README lists on the database of cfg, and the options of CREATE USER
// (resource limits: WITH …) when not empty, and returns cfg for that user.
// exec runs a statement as the server's administrator. The user is dropped
// when t ends.
func mysqlApplicationUser(t *testing.T, exec func(t testing.TB, statement string), cfg *mysql.Config, options string) *mysql.Config {
	t.Helper()
	name := "app_" + strings.ToLower(rand.Text()[:10])
	user := "'" + name + "'@'%'"
	exec(t, strings.TrimSpace("CREATE USER "+user+" IDENTIFIED BY 'app' "+options))
	t.Cleanup(func() { exec(t, "DROP USER IF EXISTS "+user) })
	for _, grant := range mysqlGrants {
		exec(t, strings.NewReplacer("{db}", "`"+cfg.DBName+"`", "{user}", user).Replace(grant))
	}
	cfg = cfg.Clone()
	cfg.User, cfg.Passwd = name, "app"
	return cfg
}

// openMySQL opens a handle on cfg, closed when t ends.
func openMySQL(t *testing.T, cfg *mysql.Config) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// everyCall runs every call of b's repository on db, a pool, and then
// inside a transaction of db that it commits, and fails t on the first
// error. Each run has owners and topics of its own.
func everyCall[Tx any](t *testing.T, b conformance.Backend[Tx], db Tx) {
	t.Run("pool", func(t *testing.T) { everyCallOn(t, b, db, "pool") })
	t.Run("transaction", func(t *testing.T) {
		tx, end, err := b.Begin(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		everyCallOn(t, b, tx, "tx")
		if err := end(true); err != nil {
			t.Fatalf("commit: %v", err)
		}
	})
}

// everyCallOn runs every call on db, with owners and topics named after
// prefix.
func everyCallOn[Tx any](t *testing.T, b conformance.Backend[Tx], db Tx, prefix string) {
	t.Helper()
	ctx := t.Context()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	newRepo := func(name string) taskapi.Repository[Tx] {
		repo, err := b.New(prefix + "-" + name)
		step("New", err)
		return repo
	}
	repo, other := newRepo("app"), newRepo("other")
	topic, gone := prefix+"-t", prefix+"-gone"
	_, err := repo.Register(ctx, db)
	step("Register", err)
	_, err = other.Register(ctx, db)
	step("Register of another", err)
	step("Heartbeat", repo.Heartbeat(ctx, db))
	for _, name := range []string{topic, gone} {
		_, err = repo.Initialize(ctx, db, name)
		step("Initialize", err)
	}
	_, err = repo.Topics(ctx, db)
	step("Topics", err)
	// Every push, revival and junction below meets a capacity, as does the
	// destroyed topic's.
	capacitor, ok := repo.(taskapi.Capacitor[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Capacitor", repo)
	}
	step("SetCapacity", capacitor.SetCapacity(ctx, db, topic, taskapi.Capacity{Ready: 10_000, PerIdentifier: 5_000}))
	step("SetCapacity of another topic", capacitor.SetCapacity(ctx, db, gone, taskapi.Capacity{Ready: 1}))
	_, err = capacitor.Capacities(ctx, db)
	step("Capacities", err)
	// Every poll below meets limits (a keyed poll, and the trigger of the
	// limited partition on PostgreSQL), as does the destroyed topic's.
	regulator, ok := repo.(taskapi.Regulator[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Regulator", repo)
	}
	step("SetLimits", regulator.SetLimits(ctx, db, topic, taskapi.Limits{Active: 1000, PerIdentifier: 100}))
	step("SetLimits of another topic", regulator.SetLimits(ctx, db, gone, taskapi.Limits{Active: 5}))
	_, err = regulator.Limits(ctx, db)
	step("Limits", err)
	// The activation and the term of the topic that is destroyed below go
	// with it.
	activator, ok := repo.(taskapi.Activator[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Activator", repo)
	}
	step("SetActivation", activator.SetActivation(ctx, db, gone, taskapi.Paused))
	_, err = activator.Activations(ctx, db)
	step("Activations", err)
	auditor, ok := repo.(taskapi.Auditor[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Auditor", repo)
	}
	_, err = auditor.Record(ctx, db, taskapi.AuditEntry{Actor: "app", Origin: "cli", Action: "pause", Params: `{"topic":["gone"]}`, Changed: 1})
	step("Record", err)
	_, err = auditor.AuditLog(ctx, db, 0, 10)
	step("AuditLog", err)
	leader, ok := repo.(taskapi.Leader[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Leader", repo)
	}
	term, ok, err := leader.Lead(ctx, db, gone, time.Minute)
	step("Lead", err)
	if !ok {
		t.Fatalf("Lead of a fresh topic refused: term %d of %q", term.Number, term.Owner)
	}
	_, _, err = leader.Renew(ctx, db, term, time.Hour)
	step("Renew", err)
	_, err = repo.Poll(ctx, db, gone, 5, term)
	step("Poll under a term", err)
	held, err := leader.Hold(ctx, db, term)
	step("Hold", err)
	if !held {
		t.Fatalf("Hold of the current term %d reported it over", term.Number)
	}
	step("Concede", leader.Concede(ctx, db, term))
	clock, ok := repo.(taskapi.Clock[Tx])
	if !ok {
		t.Fatalf("%T is no taskapi.Clock", repo)
	}
	_, err = clock.Now(ctx, db)
	step("Now", err)
	_, err = repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: "single"})
	step("Push of 1", err)
	_, err = repo.Push(ctx, db, topic, taskapi.Append, creations(150, 10)...)
	step("Push of 150", err)
	_, err = repo.Push(ctx, db, topic, taskapi.Replace, taskapi.Creation{Identifier: "id-1"}, taskapi.Creation{Identifier: "id-2"})
	step("Push with Replace", err)
	_, err = repo.Push(ctx, db, topic, taskapi.Append, taskapi.Creation{Identifier: "held", Suspended: true})
	step("Push suspended", err)
	polled, err := repo.Poll(ctx, db, topic, 20)
	step("Poll", err)
	if len(polled) != 20 {
		t.Fatalf("Poll = %d tasks, want 20", len(polled))
	}
	_, err = repo.Poll(ctx, db, topic, 5, taskapi.SingularByIdentifier)
	step("conditional Poll", err)
	_, _, err = taskapi.PollOne(ctx, repo, db, topic, taskapi.LIFO)
	step("PollOne", err)
	done := make([]taskapi.Completion, len(polled))
	for i, task := range polled {
		done[i] = taskapi.Completion{Task: task, Decision: taskapi.Decision{Result: taskapi.Result(i % 4), Output: "out"}}
	}
	step("Complete", repo.Complete(ctx, db, topic, done...))
	_, err = repo.Revive(ctx, db, topic, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, 2)
	step("Revive", err)
	_, err = repo.ReviveTasks(ctx, db, topic, taskapi.ReviveReset, polled[3])
	step("ReviveTasks", err)
	_, err = repo.ReviveTasks(ctx, db, topic, taskapi.ReviveReplace, polled[7])
	step("ReviveTasks with Replace", err)
	step("Reassign", repo.Reassign(ctx, db, topic, taskapi.Assignment{Task: polled[2], Result: taskapi.Success}))
	step("Reassign with an output", repo.Reassign(ctx, db, topic, taskapi.Assignment{Task: polled[2], Result: taskapi.Success, Output: "note"}))
	_, err = repo.ReassignAll(ctx, db, topic, taskapi.Filtered, taskapi.Success, taskapi.Unbounded)
	step("ReassignAll", err)
	_, err = repo.Join(ctx, db, topic, taskapi.Singular, []string{"held"})
	step("Join", err)
	_, err = repo.Page(ctx, db, topic, taskapi.Listing{}, taskapi.Inception, 10, taskapi.Forward)
	step("Page", err)
	_, _, err = repo.Lookup(ctx, db, topic, polled[0].Sequence)
	step("Lookup", err)
	_, err = repo.Count(ctx, db, taskapi.Recent, taskapi.Counting{}, taskapi.Unbounded)
	step("Count", err)
	_, err = repo.Count(ctx, db, taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
	step("Count of one topic", err)
	_, err = repo.Results(ctx, db, time.Time{}, time.Time{})
	step("Results", err)
	_, err = repo.Resolve(ctx, db, time.Now(), true)
	step("Resolve", err)
	_, err = taskapi.PageAt(ctx, repo, db, topic, taskapi.Listing{}, time.Now().Add(-time.Hour), 10, taskapi.Forward)
	step("PageAt", err)
	_, err = taskapi.PurgeBefore(ctx, repo, db, topic, time.Now())
	step("PurgeBefore", err)
	_, err = repo.Purge(ctx, db, topic, taskapi.Unbounded)
	step("Purge", err)
	err = repo.Refresh(ctx, db)
	if prefix == "tx" && errors.Is(err, taskapi.ErrInvalidArgument) {
		err = nil // MySQL's ANALYZE TABLE would commit the transaction: Refresh refuses it
	}
	step("Refresh", err)
	_, err = other.Expire(ctx, db, 0)
	step("Expire", err)
	_, err = other.PurgeOwners(ctx, db, 0)
	step("PurgeOwners", err)
	_, err = repo.Owners(ctx, db, time.Hour)
	step("Owners", err)
	_, err = repo.NextDue(ctx, db, topic)
	step("NextDue", err)
	// The marks of the topic that is destroyed below go with it.
	mark := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	_, err = repo.Advance(ctx, db, gone, "s", time.Time{}, mark)
	step("Advance from zero", err)
	_, err = repo.Advance(ctx, db, gone, "s", mark, mark.Add(time.Hour))
	step("Advance", err)
	_, err = repo.Mark(ctx, db, gone, "s")
	step("Mark", err)
	step("SetCapacity to none", capacitor.SetCapacity(ctx, db, topic, taskapi.Capacity{}))
	step("SetLimits to none", regulator.SetLimits(ctx, db, topic, taskapi.Limits{}))
	step("PurgeAll", repo.PurgeAll(ctx, db, topic))
	_, err = repo.Destroy(ctx, db, gone)
	step("Destroy", err)
	_, err = repo.Initialize(ctx, db, gone)
	step("Initialize of a destroyed topic", err)
	_, err = repo.Push(ctx, db, gone, taskapi.Append, taskapi.Creation{Identifier: "back"})
	step("Push to a topic initialized again", err)
	_, err = newRepo("app").Register(ctx, db)
	step("Register of a restarted owner", err)
}

// postgresGrants are the rights README lists for an application role on
// PostgreSQL; {role} is the role.
var postgresGrants = []string{
	"GRANT USAGE ON SCHEMA public TO {role}",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON task, task_topic, task_owner, task_hold TO {role}",
	"GRANT USAGE ON SEQUENCE task_sequence TO {role}",
	"GRANT EXECUTE ON FUNCTION task_truncate(text), task_analyze(text[]) TO {role}",
	"GRANT SELECT, INSERT, UPDATE ON task_activation, task_leader TO {role}",
	"GRANT SELECT, INSERT, UPDATE, DELETE ON task_schedule TO {role}",
	"GRANT SELECT, INSERT ON task_audit TO {role}",
}

// TestTaskansiPostgresApplicationRole runs every call through taskansi as a
// role with the grants README lists and nothing more: it creates and
// destroys topics (partitions) that it does not own.
func TestTaskansiPostgresApplicationRole(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("pgx", applicationRoleURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	everyCall(t, ansiBackend(taskansi.Postgres, nil), taskansi.DB(db))
}

// applicationRoleURL creates a fresh migrated database and a role with the
// grants README lists on it, and returns the URL that logs in as the role.
// Each of before runs on the database first, as the owner.
func applicationRoleURL(t *testing.T, before ...string) string {
	t.Helper()
	return roleURL(t, testdb.PostgresURL(t), append(before, "CREATE ROLE {role} LOGIN")...)
}

// roleURL runs statements on the database dbURL as its owner, {role} in
// them naming a role of the test's own that one of them creates, grants
// the role the rights README lists, and returns the URL that logs in as
// the role. The role is dropped when t ends.
func roleURL(t *testing.T, dbURL string, statements ...string) string {
	t.Helper()
	return grantedRoleURL(t, dbURL, postgresGrants, statements...)
}

// grantedRoleURL is roleURL with grants instead of the rights README lists.
func grantedRoleURL(t *testing.T, dbURL string, grants []string, statements ...string) string {
	t.Helper()
	ctx := t.Context()
	role := "app_" + strings.ToLower(rand.Text()[:10])
	admin, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(statement string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, strings.ReplaceAll(statement, "{role}", role)); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	t.Cleanup(func() {
		defer admin.Close()
		for _, statement := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := admin.ExecContext(context.Background(), statement); err != nil {
				t.Errorf("%s: %v", statement, err)
			}
		}
	})
	for _, statement := range append(statements, grants...) {
		exec(statement)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// TestTaskpgApplicationRole runs every call through taskpg as a role with
// the grants README lists and nothing more: it creates and destroys topics
// (partitions) that it does not own, truncates and analyzes them.
func TestTaskpgApplicationRole(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), applicationRoleURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	everyCall(t, pgBackend(), taskpg.DB(pool))
}

// A topic's partition carries task's grants (migration 00017), so that
// taskpg's statements on the partition (taskpg/partition.go) run for an
// application role too: a topic created after the role's grants gives it
// the partition at once; one created before, once the owner runs
// task_grant_partitions(), as docs/operating.md says.
func TestAPartitionCarriesTheGrantsOfTask(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := testdb.PostgresURL(t)
	roleURL := roleURL(t, dbURL, "INSERT INTO task_topic (topic) VALUES ('before')", "CREATE ROLE {role} LOGIN")
	u, err := url.Parse(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	role := u.User.Username()
	admin := testdb.Pool(t, dbURL, 2)
	pool, err := pgxpool.New(ctx, roleURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	repo, err := taskpg.New("app")
	if err == nil {
		_, err = repo.Initialize(ctx, pool, "after")
	}
	if err != nil {
		t.Fatalf("Initialize as the role: %v", err)
	}
	partition := func(topic string) (name string) {
		t.Helper()
		if err := admin.QueryRow(ctx, `SELECT format('public.%I', 'task_' || md5($1))`, topic).Scan(&name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	granted := func(topic string) (ok bool) {
		t.Helper()
		err := admin.QueryRow(ctx, `SELECT has_table_privilege($1, $2, 'SELECT, INSERT, UPDATE, DELETE')`, role, partition(topic)).Scan(&ok)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !granted("after") {
		t.Errorf("the partition of a topic the role created lacks task's grants")
	}
	if granted("before") {
		t.Fatalf("the partition of a topic created before the role's grants has them already: the test proves nothing")
	}
	var partitions int
	if err := admin.QueryRow(ctx, "SELECT public.task_grant_partitions()").Scan(&partitions); err != nil {
		t.Fatalf("task_grant_partitions(): %v", err)
	}
	if partitions != 2 || !granted("before") {
		t.Errorf("task_grant_partitions() = %d (want 2), and the earlier partition has task's grants: %v", partitions, granted("before"))
	}
	// The role reads and writes the partition itself, as taskpg's own round trips do.
	if _, err := pool.Exec(ctx, "UPDATE "+partition("before")+" SET state = state"); err != nil {
		t.Errorf("the role on the partition: %v", err)
	}
}

// A role granted its rights after a topic got its capacity has no rights on
// the topic's sequences of tickets (given to the roles that could insert
// tasks then): its pushes are admitted by counts, and the capacity holds.
func TestTaskpgRoleGrantedAfterACapacityPushes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, applicationRoleURL(t,
		"INSERT INTO task_topic (topic) VALUES ('capped')",
		"UPDATE task_topic SET capacity = 2 WHERE topic = 'capped'"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	repo, err := taskpg.New("late")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := repo.Push(ctx, pool, "capped", taskapi.Append, taskapi.Creation{Identifier: "late"}); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	_, err = repo.Push(ctx, pool, "capped", taskapi.Append, taskapi.Creation{Identifier: "late"})
	var full *taskapi.CapacityError
	if !errors.As(err, &full) || full.Capacity != 2 || full.Count != 3 {
		t.Fatalf("third push = %v, want a refusal at capacity 2 with 3 Ready tasks", err)
	}
}
