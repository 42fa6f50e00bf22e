package testdb_test

import (
	"net/url"
	"path"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// PgBouncerURL reaches the test's own database through the shared
// PgBouncer, whose console then lists that database's pool in transaction
// mode.
func TestPgBouncerURLPoolsTransactions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := testdb.PostgresURL(t)
	through := testdb.PgBouncerURL(t, dbURL)
	direct, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := path.Base(direct.Path)
	conn, err := pgx.Connect(ctx, through)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var database string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&database); err != nil || database != name {
		t.Fatalf("through PgBouncer: database %q (%v), want %q", database, err, name)
	}

	console, err := url.Parse(through)
	if err != nil {
		t.Fatal(err)
	}
	if console.Host == direct.Host {
		t.Fatalf("PgBouncerURL kept the server's address %s", direct.Host)
	}
	console.Path = "/pgbouncer"
	q := console.Query()
	q.Set("default_query_exec_mode", "simple_protocol") // the console knows no other
	console.RawQuery = q.Encode()
	admin, err := pgx.Connect(ctx, console.String())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, "SHOW POOLS")
	if err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{}
	for rows.Next() {
		row, err := pgx.RowToMap(rows)
		if err != nil {
			t.Fatal(err)
		}
		db, _ := row["database"].(string)
		mode, _ := row["pool_mode"].(string)
		modes[db] = mode
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if modes[name] != "transaction" {
		t.Fatalf("PgBouncer's pools %v: want %s in transaction mode", modes, name)
	}
}
