package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// maxFound bounds the tasks one search finds (and its actions name);
// maxScanned and scanBudget bound what a search by a field of the input
// reads in one topic, in tasks and in time (the page offers to go on
// from there); findChunk is how many one read takes.
const (
	maxFound   = 1000
	maxScanned = 100_000
	scanBudget = 150 * time.Millisecond
	findChunk  = 500
)

// maxOutputText bounds the text a search looks for in the outputs.
const maxOutputText = 1000

// searchQuery is what the search page looks for.
type searchQuery struct {
	topic      string // empty: every topic (not with a field or an output)
	search     taskapi.Search
	field      []string // the path of a field of the input, by dots
	fieldText  string
	value      string
	output     string // text the output holds, byte for byte
	states     []taskapi.State
	whole      bool  // scan within the page's read timeout, not scanBudget (whole=1)
	identified bool  // a prefix is given
	before     int64 // a field is searched in the tasks below this sequence
}

// found is what a search found.
type found struct {
	infos   map[string][]taskapi.Info // by topic, newest first
	topics  []string                  // the topics with matches, in the order read
	n       int
	scanned int   // tasks read to match the field
	partial bool  // the search stopped at its deadline or its bound of reads
	next    int64 // where a search of a field goes on: the last task read; 0 when it read every one
}

// add records the matches of topic.
func (f *found) add(topic string, infos []taskapi.Info) {
	if len(infos) == 0 {
		return
	}
	if _, ok := f.infos[topic]; !ok {
		f.topics = append(f.topics, topic)
	}
	f.infos[topic] = append(f.infos[topic], infos...)
	f.n += len(infos)
}

// runSearch finds up to maxFound tasks of q, newest first in each topic.
// A deadline that passes ends it with what it found, marked partial.
func runSearch(ctx context.Context, store Store, q searchQuery, topics []string) (*found, error) {
	f := &found{infos: map[string][]taskapi.Info{}}
	for _, topic := range topics {
		var err error
		if q.scans() {
			err = scanField(ctx, store, q, topic, f)
		} else {
			var infos []taskapi.Info
			infos, err = store.Find(ctx, topic, q.search, taskapi.MaxSequence, maxFound-f.n)
			f.add(topic, infos)
		}
		if err != nil && ctx.Err() == nil {
			return f, err
		}
		// Past the deadline, what was found is shown, as partial.
		if f.partial = f.partial || ctx.Err() != nil || f.n >= maxFound; f.partial {
			return f, nil
		}
	}
	return f, nil
}

// scans says whether q matches tasks one by one, by a field of the input
// or by the text of the output, which no index serves, or by state.
func (q searchQuery) scans() bool { return len(q.field) > 0 || q.output != "" || len(q.states) > 0 }

// matches says whether info has q.value at q.field of its input, and
// q.output in its output or in the last error it records as the failures
// page shows it (lastError: an attempt log's error is JSON in the output,
// its quotes escaped there), of those q asks.
func (q searchQuery) matches(info taskapi.Info) bool {
	return (len(q.states) == 0 || slices.Contains(q.states, info.State)) &&
		(len(q.field) == 0 || fieldIs(info.Input, q.field, q.value)) &&
		(q.output == "" || strings.Contains(info.Output, q.output) || strings.Contains(lastError(info.Output), q.output))
}

// scanField reads the tasks of topic newest first from below q.before
// (those of the prefixes when given) and keeps those q matches (a field
// of the input, a text of the output), up to maxScanned tasks read or
// scanBudget spent. Inputs and outputs are text in every schema, so the
// match is made here, on each task, not by the database.
//
// The budget is the deadline of the reads after the first, and so their
// statement_timeout on PostgreSQL (four fifths of the time left, see
// transactPG): the server stops the read under way a moment before the
// budget's context ends. Such a stop ends the search as the budget's end
// does, not as the page's read timeout (a 503 after some 160 ms).
//
// A search for a whole group of failures (whole=1, the failures page's
// link) reads until the page's deadline is near instead, for all it finds
// to be acted on at once: readTimeout is the page's.
func scanField(ctx context.Context, store Store, q searchQuery, topic string, f *found) error {
	spend := scanBudget
	if q.whole {
		spend = pageShare(ctx, scanBudget)
	}
	budget, cancel := context.WithTimeout(ctx, spend)
	defer cancel()
	// The first read has the page's deadline, not the budget: every
	// search reads some tasks, and one that goes on makes progress.
	reading := ctx
	for cursor := q.before; ; reading = budget {
		if f.scanned >= maxScanned || f.n >= maxFound || budget.Err() != nil {
			f.partial, f.next = true, cursor
			return nil
		}
		var infos []taskapi.Info
		var err error
		if q.identified {
			infos, err = store.Find(reading, topic, q.search, cursor, findChunk)
		} else {
			infos, err = store.Page(reading, topic, taskapi.Listing{States: q.states}, cursor, findChunk, taskapi.Backward)
		}
		if err != nil && reading == budget && ctx.Err() == nil && (budget.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
			f.partial, f.next = true, cursor // the budget ran out in the read: stop at cursor
			return nil
		}
		if err != nil {
			return err
		}
		var hits []taskapi.Info
		read := 0
		for _, info := range infos {
			read, cursor = read+1, info.Sequence
			if q.matches(info) {
				if hits = append(hits, info); f.n+len(hits) == maxFound {
					break
				}
			}
		}
		f.scanned += read
		f.add(topic, hits)
		if len(infos) < findChunk && read == len(infos) {
			return nil
		}
	}
}

// fieldIs reports whether input is JSON with value at path: a string
// equal to it, or a number, true, false or null written as it.
func fieldIs(input string, path []string, value string) bool {
	if trimmed := strings.TrimLeft(input, " \t\r\n"); trimmed == "" || trimmed[0] != '{' && trimmed[0] != '[' {
		return false // no JSON object or array: not worth decoding
	}
	d := json.NewDecoder(strings.NewReader(input))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return false
	}
	for _, key := range path {
		switch node := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = node[key]; !ok {
				return false
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(node) {
				return false
			}
			v = node[i]
		default:
			return false
		}
	}
	switch leaf := v.(type) {
	case string:
		return leaf == value
	case json.Number:
		return string(leaf) == value
	case bool:
		return strconv.FormatBool(leaf) == value
	case nil:
		return value == "null"
	}
	b, err := json.Marshal(v)
	var compact bytes.Buffer
	return err == nil && json.Compact(&compact, []byte(value)) == nil && compact.String() == string(b)
}
