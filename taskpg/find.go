package taskpg

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/internal/prefix"
	"github.com/taskrepo/taskrepo/taskapi"
)

var _ taskapi.Finder[DB] = (*Repository)(nil)

// find reads the newest tasks of a topic below a cursor whose identifier
// and reference match LIKE patterns (an empty one filters nothing). PostgreSQL's
// LIKE is exact, case included, so the pattern alone decides. The walk
// goes down the primary key from the cursor and stops at size matches.
const find = `
SELECT ` + infoColumns + ` FROM {schema}.task
WHERE topic = $1 AND sequence < $2
  AND ($3::text = '' OR identifier LIKE $3 ESCAPE '` + prefix.Escape + `')
  AND ($4::text = '' OR reference LIKE $4 ESCAPE '` + prefix.Escape + `')
ORDER BY sequence DESC LIMIT $5`

// Find lists up to size tasks of topic whose identifier and reference
// begin with the prefixes of search, newest first from below cursor.
func (r *Repository) Find(ctx context.Context, db DB, topic string, search taskapi.Search, cursor int64, size int) ([]taskapi.Info, error) {
	if err := check.Find(topic, search); err != nil {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	if size < 1 || cursor <= taskapi.Inception {
		return nil, nil
	}
	rows, _ := query(ctx, db, strings.ReplaceAll(find, "{schema}", r.schema), topic, cursor,
		prefix.Pattern(search.Identifier), prefix.Pattern(search.Reference), size)
	infos, err := pgx.CollectRows(rows, scanInfo)
	if err != nil {
		return nil, wrapf(err, "find tasks of %q", topic)
	}
	return infos, nil
}
