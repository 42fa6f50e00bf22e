package taskpg_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/taskrepo/taskrepo/internal/testkit/testdb"
	"github.com/taskrepo/taskrepo/migrations"
	"github.com/taskrepo/taskrepo/taskapi"
	"github.com/taskrepo/taskrepo/taskpg"
)

// migrateSchema migrates schema of the database at url, creating it first,
// and returns a pool with an empty search_path on that database.
func migrateSchema(t *testing.T, url, schema string) *pgxpool.Pool {
	t.Helper()
	ctx := t.Context()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	if _, err := sqlDB.ExecContext(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, sqlDB, migrations.Postgres); err != nil {
		t.Fatal(err)
	}
	poolCfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	poolCfg.ConnConfig.RuntimeParams["search_path"] = ""
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestWithSchema(t *testing.T) {
	t.Parallel()
	const schema = `we"ird sch'ema`
	db := migrateSchema(t, testdb.PostgresURL(t), schema)
	repo := newRepo(t, db, "a", taskpg.WithSchema(schema))
	if _, err := repo.Initialize(t.Context(), db, "t"); err != nil {
		t.Fatal(err)
	}
	tasks := push(t, repo, db, "t", taskapi.Replace, ids("x", "y", "x")...)
	complete(t, repo, db, "t", taskapi.Success, poll(t, repo, db, "t", 1, taskapi.SingularByIdentifierSuspendUntilSuccess)...)
	if _, err := repo.Revive(t.Context(), db, "t", taskapi.ReviveAppend, taskapi.Succeeded, taskapi.Unbounded, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Join(t.Context(), db, "t", taskapi.Eternal, []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if n, err := repo.Expire(t.Context(), db, 0); err != nil || n != 0 {
		t.Fatalf("Expire = %d, %v", n, err)
	}
	counts, err := repo.Count(t.Context(), db, taskapi.Total, taskapi.Counting{}, taskapi.Unbounded)
	if err != nil || counts["t"][taskapi.Ready].Count != 2 || counts["t"][taskapi.Recreated].Count != 1 {
		t.Fatalf("Count = %v, %v", counts, err)
	}
	if err := repo.PurgeAll(t.Context(), db, "t"); err != nil {
		t.Fatal(err)
	}
	if info, ok, err := repo.Lookup(t.Context(), db, "t", tasks[0].Sequence); ok || err != nil {
		t.Fatalf("Lookup after PurgeAll = %v, %v, %v", info, ok, err)
	}
	if err := repo.Refresh(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	var public int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM public.task_owner`).Scan(&public); err != nil || public != 0 {
		t.Fatalf("public.task_owner has %d rows (%v), want 0", public, err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		owner string
		opts  []taskpg.Option
	}{
		{"", nil},
		{"a\x00", nil},
		{"a", []taskpg.Option{taskpg.WithSchema("")}},
		{"a", []taskpg.Option{taskpg.WithSchema(string(make([]byte, 64)))}},
	} {
		_, err := taskpg.New(c.owner, c.opts...)
		wantErr(t, err, taskapi.ErrInvalidArgument)
	}
	repo, err := taskpg.New("a", taskpg.WithSchema("s"), taskpg.WithExclusive())
	if err != nil || repo.Owner() != "a" {
		t.Fatalf("New = %v, %v", repo, err)
	}
}

// An unqualified table name fails on the test's empty search_path.
func TestEmptySearchPath(t *testing.T) {
	t.Parallel()
	db := testdb.Postgres(t)
	_, err := db.Exec(context.Background(), "SELECT FROM task")
	if err == nil {
		t.Fatal("unqualified table found on an empty search_path")
	}
}

// A topic whose partition is missing maps PostgreSQL's "no partition" error
// to ErrUnknownTopic.
func TestMissingPartition(t *testing.T) {
	t.Parallel()
	db, repo := setup(t, "t")
	if _, err := db.Exec(t.Context(), `DROP TABLE public.task_e358efa489f58062f10dd7316b65649e`); err != nil {
		t.Fatal(err) // md5('t')
	}
	_, err := repo.Push(t.Context(), db, "t", taskapi.Append, ids("x")...)
	wantErr(t, err, taskapi.ErrUnknownTopic)
}
