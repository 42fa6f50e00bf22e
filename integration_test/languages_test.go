package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// requireLanguagesEnv makes TestPushFromOtherLanguages fail, not skip,
// without Python's psycopg or the node example's packages (CI sets it).
const requireLanguagesEnv = "TASK_TEST_REQUIRE_LANGUAGES"

// TestPushFromOtherLanguages runs the examples of docs/languages.md, in
// Python (psycopg 3) and JavaScript (node-postgres), against a taskproc
// Client woken only by their pushes (its pause is an hour): an order
// placed and rolled back leaves no task, one committed is processed, and
// one pushed into a full topic is refused while its order commits.
func TestPushFromOtherLanguages(t *testing.T) {
	t.Parallel()
	for _, lang := range []struct {
		name    string
		command []string
		missing func() string
	}{
		{"python", []string{"/usr/bin/python3", "../examples/python/push.py"}, func() string {
			if exec.Command("/usr/bin/python3", "-c", "import psycopg").Run() != nil {
				return "Debian's python3-psycopg is not installed"
			}
			return ""
		}},
		{"node", []string{"node", "../examples/node/push.mjs"}, func() string {
			if _, err := exec.LookPath("node"); err != nil {
				return "node is not installed"
			}
			if _, err := os.Stat(filepath.Join("..", "examples", "node", "node_modules", "pg")); err != nil {
				return "the node example's packages are not installed (npm ci --prefix examples/node)"
			}
			return ""
		}},
	} {
		t.Run(lang.name, func(t *testing.T) {
			t.Parallel()
			if why := lang.missing(); why != "" {
				if os.Getenv(requireLanguagesEnv) == "1" {
					t.Fatalf("%s (required by %s=1)", why, requireLanguagesEnv)
				}
				t.Skipf("%s; skipping", why)
			}
			pushFromLanguage(t, lang.command)
		})
	}
}

// pushFromLanguage runs command, a producer that takes DSN TOPIC ORDER
// commit|rollback, against a fresh database and a Client consuming its
// tasks.
func pushFromLanguage(t *testing.T, command []string) {
	ctx := t.Context()
	dsn := testdb.PostgresURL(t)
	pool := testdb.Pool(t, dsn, 8)
	repo, err := taskpg.New("consumer")
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"mail", "full"} {
		if _, err := repo.Initialize(ctx, pool, topic); err != nil {
			t.Fatal(err)
		}
	}
	if err := repo.SetCapacity(ctx, pool, "full", taskapi.Capacity{Ready: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Push(ctx, pool, "full", taskapi.Append, taskapi.Creation{Identifier: "waiting"}); err != nil {
		t.Fatal(err)
	}
	handled := consumer(t, pool, repo, "mail")
	run := func(topic, order, outcome, want string) {
		t.Helper()
		args := append(command[1:], dsn, topic, order, outcome)
		out, err := exec.CommandContext(ctx, command[0], args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("%s %s: %v\n%s\nwant %q in the output", command[1], strings.Join(args[1:], " "), err, out, want)
		}
	}
	run("mail", "order-1", "rollback", "pushed")
	run("mail", "order-2", "commit", "pushed")
	if got := within(t, handled, "task handled"); got != `order-2 {"mail": "confirmation"}` && got != `order-2 {"mail":"confirmation"}` {
		t.Fatalf("handled %q, want order-2's (order-1 rolled back: no task)", got)
	}
	run("full", "order-3", "commit", "topic full would hold 2 Ready tasks, over its capacity of 1")
	var orders []string
	rows, _ := pool.Query(ctx, `SELECT id FROM public.orders ORDER BY id`)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		orders = append(orders, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(orders, ",") != "order-2,order-3" {
		t.Errorf("orders = %v, want order-2 and order-3 (order-1 rolled back; order-3 committed without its refused task)", orders)
	}
	counts, err := repo.Count(ctx, pool, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil {
		t.Fatal(err)
	}
	if mail, full := counts["mail"][taskapi.Succeeded].Count, counts["full"][taskapi.Ready].Count; mail != 1 || full != 1 {
		t.Errorf("%d tasks of mail succeeded and %d of full wait, want 1 and 1", mail, full)
	}
}
