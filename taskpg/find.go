package taskpg

import (
	"context"
	"strings"
	syncatomic "sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/prefix"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Finder[DB] = (*Repository)(nil)

// find reads the newest tasks of a topic below a cursor whose identifier
// and reference match LIKE patterns (an empty one filters nothing).
// PostgreSQL's LIKE is exact, case included, so the pattern alone decides
// what matches. It uses no index but under the C collations, and only for
// a constant pattern: where the database sorts by code point, the range
// of strings that begin with the prefix ($6 to $7, $8 to $9; NULL: none)
// is given too, so that the indexes by identifier and by reference serve
// a prefix that few tasks have, where the walk down the primary key would
// read the whole topic.
const find = `
SELECT ` + infoColumns + ` FROM {schema}.task
WHERE topic = $1 AND sequence < $2
  AND ($3::text = '' OR identifier LIKE $3 ESCAPE '` + prefix.Escape + `')
  AND ($4::text = '' OR reference LIKE $4 ESCAPE '` + prefix.Escape + `')
  AND ($6::text IS NULL OR identifier >= $6) AND ($7::text IS NULL OR identifier < $7)
  AND ($8::text IS NULL OR reference >= $8) AND ($9::text IS NULL OR reference < $9)
ORDER BY sequence DESC LIMIT $5`

// codePointOrder tells whether the database's collation sorts by code
// point, as the C collations do: then the strings that begin with a
// prefix are those from the prefix to its successor.
const codePointOrder = `
SELECT datcollate IN ('C', 'POSIX') OR datcollate LIKE 'C.%'
FROM pg_database WHERE datname = current_database()`

// collation remembers whether the database sorts by code point, read
// once: a database's collation does not change.
type collation struct {
	known syncatomic.Int32 // 0: not read yet; 1: by code point; 2: another order
}

// codePoints reports whether the database of db sorts by code point.
func (c *collation) codePoints(ctx context.Context, db DB) (bool, error) {
	if k := c.known.Load(); k != 0 {
		return k == 1, nil
	}
	var ordered bool
	if err := db.QueryRow(ctx, codePointOrder).Scan(&ordered); err != nil {
		return false, err
	}
	k := int32(2)
	if ordered {
		k = 1
	}
	c.known.Store(k)
	return ordered, nil
}

// Find lists up to size tasks of topic whose identifier and reference
// begin with the prefixes of search, newest first from below cursor.
func (r *Repository) Find(ctx context.Context, db DB, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error) {
	if run, err := check.Find(topic, search, cursor, size); !run {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	ordered, err := r.collation.codePoints(ctx, db)
	if err != nil {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	idFrom, idTo := prefixRange(search.Identifier, ordered)
	refFrom, refTo := prefixRange(search.Reference, ordered)
	rows, _ := query(ctx, db, strings.ReplaceAll(find, "{schema}", r.schema), topic, cursor,
		prefix.Pattern(search.Identifier), prefix.Pattern(search.Reference), size, idFrom, idTo, refFrom, refTo)
	infos, err := pgx.CollectRows(rows, scanInfo)
	if err != nil {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	return infos, nil
}

// prefixRange returns the range of the strings that begin with p in code
// point order: from p to its successor (nil: no bound), or no range when
// p is empty or the order is another.
func prefixRange(p string, ordered bool) (from, to *string) {
	if p == "" || !ordered {
		return nil, nil
	}
	runes := []rune(p)
	for len(runes) > 0 {
		last := runes[len(runes)-1] + 1
		if last >= 0xD800 && last <= 0xDFFF { // no surrogates in UTF-8
			last = 0xE000
		}
		if last <= utf8.MaxRune {
			runes[len(runes)-1] = last
			next := string(runes)
			return &p, &next
		}
		runes = runes[:len(runes)-1]
	}
	return &p, nil
}
