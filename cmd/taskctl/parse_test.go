package main

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/migrations"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		url, dsn string
		dialect  migrations.Dialect
	}{
		{"", "file:taskrepo.db?_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_txlock=immediate", migrations.SQLite},
		{"sqlite:/tmp/x.db?_pragma=busy_timeout(50)", "file:/tmp/x.db?_pragma=busy_timeout%2850%29&_txlock=immediate", migrations.SQLite},
		{"sqlite:///tmp/x.db", "file:/tmp/x.db?_pragma=busy_timeout%2810000%29&_pragma=journal_mode%28WAL%29&_txlock=immediate", migrations.SQLite},
		{"mysql://u:p@db.example/app?parseTime=true", "u:p@tcp(db.example:3306)/app?parseTime=true", migrations.MySQL},
		{"mysql://root@127.0.0.1:3307/app", "root@tcp(127.0.0.1:3307)/app", migrations.MySQL},
		{"postgres://u@h/db", "postgres://u@h/db", migrations.Postgres},
		{"postgresql://u@h:5433/db?sslmode=disable", "postgresql://u@h:5433/db?sslmode=disable", migrations.Postgres},
	}
	for _, c := range cases {
		got, err := parseTarget(c.url)
		if err != nil || got.dsn != c.dsn || got.dialect != c.dialect {
			t.Errorf("parseTarget(%q) = %q %s, %v; want %q %s", c.url, got.dsn, got.dialect, err, c.dsn, c.dialect)
		}
	}
	if got, _ := parseTarget("mysql://u:s3cret@h/db"); strings.Contains(got.shown, "s3cret") {
		t.Errorf("the shown URL %q carries the password", got.shown)
	}
}

func TestReadCreations(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	jsonl := `{"identifier":"a","input":{"k":[1,2]},"reference":"r","not_before":"+90m"}
{"identifier":"b","input":"text","not_before":"2026-12-01T00:00:00Z"}
{"identifier":"c","input":null}
`
	got, err := readCreations(strings.NewReader(jsonl), "jsonl", now, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("JSON lines: %+v, %v", got, err)
	}
	if got[0].Input != `{"k":[1,2]}` || got[0].Reference != "r" || !got[0].NotBefore.Equal(now.Add(90*time.Minute)) ||
		got[1].Input != "text" || got[1].NotBefore.Day() != 1 || got[2].Input != "" || !got[2].NotBefore.IsZero() {
		t.Fatalf("JSON lines read as %+v", got)
	}
	csvText := "\ufeffIdentifier,not_before,input\na,10m,\"x, \"\"y\"\"\"\n"
	got, err = readCreations(strings.NewReader(csvText), "csv", now, nil)
	if err != nil || len(got) != 1 || got[0].Input != `x, "y"` || !got[0].NotBefore.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("CSV: %+v, %v", got, err)
	}
	var read int
	if _, err := readCreations(strings.NewReader(jsonl), "jsonl", now, func(n int) { read += n }); err != nil || read != len(jsonl) {
		t.Fatalf("progress counted %d bytes of %d (%v)", read, len(jsonl), err)
	}
	if _, err := readCreations(strings.NewReader(jsonl), "xml", now, nil); exitCode(err) != exitUsage {
		t.Fatalf("format xml: %v", err)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"now":                       now,
		"90m":                       now.Add(-90 * time.Minute),
		"2026-11-24":                time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		"2026-11-24 08:30":          time.Date(2026, 11, 24, 8, 30, 0, 0, time.UTC),
		"2026-11-24T08:30:00+02:00": time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC),
	}
	for in, want := range cases {
		if got, err := parseWhen("--since", in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-5m", "yesterday", "2026-13-01"} {
		if _, err := parseWhen("--since", bad, now); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--since") {
			t.Errorf("parseWhen(%q): %v, want a usage error naming --since", bad, err)
		}
	}
}

// FuzzReadCreations feeds push's parsers any input: they never panic, and
// every task they accept passes the repository's own checks.
func FuzzReadCreations(f *testing.F) {
	f.Add(`{"identifier":"a","input":{"x":1},"reference":"r","not_before":"+1m"}`, false)
	f.Add("identifier,input\na,\"b\"\"c\"\n", true)
	f.Add(`{"identifier":"\u0000"}`, false)
	f.Add("identifier\n\"unterminated\n", true)
	f.Add(`{"identifier":"a","not_before":"9999-12-31T23:59:59Z"}`, false)
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, input string, csv bool) {
		format := "jsonl"
		if csv {
			format = "csv"
		}
		creations, err := readCreations(strings.NewReader(input), format, now, nil)
		if err != nil {
			var e *exitError
			if !errors.As(err, &e) || e.code != exitUsage {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		for _, c := range creations {
			if err := check.Creation(c); err != nil || !utf8.ValidString(c.Identifier) {
				t.Fatalf("accepted a task the repository refuses: %+v: %v", c, err)
			}
		}
	})
}
