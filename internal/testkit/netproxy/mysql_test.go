package netproxy_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/taskrepo/taskrepo/internal/testkit/netproxy"
	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
)

// myRig is a MySQL or MariaDB database with a table probe, reached
// directly and through a proxy.
type myRig struct {
	direct  *sql.DB
	proxy   *netproxy.Proxy
	proxied string // the DSN through the proxy
}

func newMyRig(t *testing.T) *myRig {
	t.Helper()
	dsn := testdb.MySQLConfig(t).FormatDSN()
	proxy, proxied, err := netproxy.ForMySQLDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	if _, err := direct.ExecContext(t.Context(), "CREATE TABLE probe (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return &myRig{direct: direct, proxy: proxy, proxied: proxied}
}

// client runs the insertion of sqlInsert, which sends statements, the last
// with last in its text, on a fresh handle through the proxy.
func (r *myRig) client(inTx bool, statements int, last string) client {
	return client{
		run: func(ctx context.Context, id int) error {
			db, err := sql.Open("mysql", r.proxied)
			if err != nil {
				return err
			}
			defer db.Close()
			return sqlInsert(ctx, db, inTx, "?", id)
		},
		probe: func(ctx context.Context) error {
			db, err := sql.Open("mysql", r.proxied)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, "SELECT 1")
			return err
		},
		exists: func(ctx context.Context, id int) (bool, error) {
			return sqlExists(ctx, r.direct, "SELECT EXISTS (SELECT * FROM probe WHERE id = ?)", id)
		},
		statements: statements,
		last:       last,
	}
}

// TestCutAtEachStatementOfDatabaseSQLOnMySQL cuts before, then after,
// each statement of an insertion with database/sql on go-sql-driver/mysql,
// on the pool (a COM_STMT_PREPARE, a COM_STMT_EXECUTE, and a
// COM_STMT_CLOSE, which is no statement) and in a transaction (START
// TRANSACTION and COMMIT around them).
func TestCutAtEachStatementOfDatabaseSQLOnMySQL(t *testing.T) {
	t.Parallel()
	for name, inTx := range map[string]bool{"insert": false, "transaction": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newMyRig(t)
			if inTx {
				sweepBoth(t, r.proxy, r.client(true, 4, "commit"))
			} else {
				sweepBoth(t, r.proxy, r.client(false, 2, "insert"))
			}
		})
	}
}

// TestMySQLSessionsStayPlain checks that a client that would compress and
// use TLS if the server offered them talks in plain packets through the
// proxy, which counts its statements.
func TestMySQLSessionsStayPlain(t *testing.T) {
	t.Parallel()
	r := newMyRig(t)
	cfg, err := mysql.ParseDSN(r.proxied)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = "preferred"
	if err := cfg.Apply(mysql.EnableCompression(true)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r.proxy.CutAtStatement(3, netproxy.Before)
	defer r.proxy.Restore()
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	queries := []string{"SHOW SESSION STATUS LIKE 'Ssl_cipher'", "SHOW SESSION STATUS LIKE 'Compression'"}
	for i, want := range []string{"", "OFF"} {
		var name, value string
		if err := db.QueryRowContext(ctx, queries[i]).Scan(&name, &value); err != nil {
			t.Fatal(err)
		}
		if value != want {
			t.Errorf("%s = %q, want %q", name, value, want)
		}
	}
	got := r.proxy.Statements()
	if len(got) != 2 || got[0].SQL != queries[0] || got[1].SQL != queries[1] {
		t.Errorf("Statements() = %v, want the two queries", got)
	}
}
