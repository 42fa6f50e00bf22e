package docs_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/taskpg"
)

// sqlBlock finds the SQL code blocks of a Markdown file.
var sqlBlock = regexp.MustCompile("(?ms)^```sql\n(.*?)^```")

// mysqlGrant tells the blocks written for MySQL: they grant to 'app'@'%'
// on the schema tasks.
var mysqlGrant = regexp.MustCompile(`'app'@'%'`)

// TestSQLBlocksRun runs every SQL code block of README.md and docs/*.md on
// a migrated database of the test's own: the MySQL grants on MariaDB (or
// MySQL), the others on PostgreSQL, where a topic invoices exists. The
// role or user app that grants name is one of the test's own.
func TestSQLBlocksRun(t *testing.T) {
	blocks := 0
	for file, text := range markdownFiles(t) {
		for _, m := range sqlBlock.FindAllStringSubmatchIndex(text, -1) {
			blocks++
			line := 1 + strings.Count(text[:m[0]], "\n")
			body := text[m[2]:m[3]]
			name := fmt.Sprintf("%s:%d", filepath.Base(file), line)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				if mysqlGrant.MatchString(body) {
					runMySQL(t, body)
				} else {
					runPostgres(t, body)
				}
			})
		}
	}
	if blocks == 0 {
		t.Fatal("no SQL code block found in README.md and docs/*.md")
	}
}

// runPostgres runs a block's statements on a migrated PostgreSQL database
// with a topic invoices, granting to a role of the test's own for app.
func runPostgres(t *testing.T, body string) {
	pool := testdb.Postgres(t)
	ctx := t.Context()
	repo, err := taskpg.New("docs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Initialize(ctx, pool, "invoices"); err != nil {
		t.Fatal(err)
	}
	role := "docs_app_" + strings.ToLower(rand.Text()) // roles are the server's: one of this test's own
	if strings.Contains(body, " TO app") {
		if _, err := pool.Exec(ctx, "CREATE ROLE "+role); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = pool.Exec(ctx, "DROP OWNED BY "+role)
			_, _ = pool.Exec(ctx, "DROP ROLE "+role)
		})
		body = strings.ReplaceAll(body, " TO app", " TO "+role)
	}
	// The docs' statements name the tables as an application does, on
	// the default search_path; the tests' connections have an empty one.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET search_path TO public"); err != nil {
		t.Fatal(err)
	}
	for _, statement := range statements(body) {
		if _, err := conn.Exec(ctx, statement); err != nil {
			t.Errorf("%s: %v", statement, err)
		}
	}
}

// runMySQL runs a block's grants on a migrated MySQL database of the
// test's own, for a user of the test's own, the schema tasks being that
// database.
func runMySQL(t *testing.T, body string) {
	db := testdb.MySQL(t)
	ctx := t.Context()
	var schema string
	if err := db.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	user := "'docs_app_" + strings.ToLower(rand.Text()[:12]) + "'@'%'" // users are the server's: one of this test's own
	testdb.MySQLAdminExec(t, "CREATE USER "+user)
	t.Cleanup(func() { testdb.MySQLAdminExec(t, "DROP USER "+user) })
	body = strings.ReplaceAll(body, "'app'@'%'", user)
	body = strings.ReplaceAll(body, " tasks.", " `"+schema+"`.")
	for _, statement := range statements(body) {
		testdb.MySQLAdminExec(t, statement)
	}
}

// statements splits a block into its statements, at the semicolons that
// end lines.
func statements(body string) []string {
	var out []string
	for _, s := range strings.SplitAfter(body, ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, strings.TrimSuffix(s, ";"))
		}
	}
	return out
}

// markdownFiles returns README.md and docs/*.md by name, with their text.
func markdownFiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, file := range append(files, "../../README.md") {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out[file] = string(text)
	}
	return out
}
