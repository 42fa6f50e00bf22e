package taskansi

import (
	"context"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/prefix"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Finder[DB] = (*Repository)(nil)

// Find lists up to size tasks of topic whose identifier and reference
// begin with the prefixes of search, newest first from below cursor.
func (r *Repository) Find(ctx context.Context, db DB, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error) {
	if run, err := check.Find(topic, search, cursor, size); !run {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	// The page backward, with a LIKE and an exact comparison of the start
	// per prefix given: LIKE lets the database narrow by pattern, the
	// comparison keeps the match byte for byte where LIKE folds case
	// (SQLite folds ASCII letters).
	var filters string
	args := []any{topic, cursor}
	for _, f := range []struct{ column, prefix string }{{"identifier", search.Identifier}, {"reference", search.Reference}} {
		if f.prefix == "" {
			continue
		}
		filters += " AND " + f.column + " LIKE ? ESCAPE '" + prefix.Escape + "' AND substr(" + f.column + ", 1, ?) = ?"
		args = append(args, prefix.Pattern(f.prefix), r.length(f.prefix), f.prefix)
	}
	infos, err := queryInfos(ctx, db, r.expand(r.q.page[taskapi.Backward], "{filters}", filters), append(args, size)...)
	if err != nil {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	return infos, nil
}

// length is the length of s as substr counts it: bytes on MySQL, whose
// names are VARBINARY, characters elsewhere.
func (r *Repository) length(s string) int {
	if r.dialect == dialects[MySQL] {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}
