package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

// pushLine is one task of push's input, as JSON lines spell it. input may
// be a JSON string (stored as it is) or any other JSON value (stored as
// its JSON text).
type pushLine struct {
	Identifier string          `json:"identifier"`
	Input      json.RawMessage `json:"input"`
	Reference  string          `json:"reference"`
	NotBefore  string          `json:"not_before"`
}

// inputColumns are the columns a CSV header may name.
var inputColumns = []string{"identifier", "input", "reference", "not_before"}

// readCreations reads every task of r in format ("jsonl" or "csv"),
// checking each; an error names the line and the problem, and nothing is
// pushed then. progress, when not nil, is told how many bytes were read.
func readCreations(r io.Reader, format string, now time.Time, progress func(int)) ([]taskapi.Creation, error) {
	counted := &countingReader{r: r, progress: progress}
	switch format {
	case "jsonl":
		return readJSONLines(counted, now)
	case "csv":
		return readCSV(counted, now)
	}
	return nil, usagef("--format %q: use jsonl or csv", format)
}

// readJSONLines reads one JSON object per line; blank lines are skipped.
func readJSONLines(r io.Reader, now time.Time) ([]taskapi.Creation, error) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 64*1024*1024)
	var out []taskapi.Creation
	for n := 1; scanner.Scan(); n++ {
		line := bytes.TrimSpace(scanner.Bytes())
		if len(line) == 0 {
			continue
		}
		var l pushLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, usagef("line %d: %v (want {\"identifier\": …, \"input\": …, \"reference\": …, \"not_before\": …})", n, err)
		}
		if dec.More() {
			return nil, usagef("line %d: more than one JSON value", n)
		}
		input, err := inputText(l.Input)
		if err != nil {
			return nil, usagef("line %d: %v", n, err)
		}
		c, err := creation(l.Identifier, input, l.Reference, l.NotBefore, now)
		if err != nil {
			return nil, usagef("line %d: %v", n, err)
		}
		out = append(out, c)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	return out, nil
}

// inputText is the stored text of a JSON input value.
func inputText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	return string(raw), nil
}

// readCSV reads a CSV file whose first row names its columns.
func readCSV(r io.Reader, now time.Time) ([]taskapi.Creation, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, usagef("CSV header: %v", err)
	}
	index, err := csvColumns(header)
	if err != nil {
		return nil, err
	}
	var out []taskapi.Creation
	for {
		record, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, usagef("CSV: %v", err)
		}
		line, _ := cr.FieldPos(0)
		field := func(name string) string {
			if i, ok := index[name]; ok {
				return record[i]
			}
			return ""
		}
		c, err := creation(field("identifier"), field("input"), field("reference"), field("not_before"), now)
		if err != nil {
			return nil, usagef("line %d: %v", line, err)
		}
		out = append(out, c)
	}
}

// csvColumns maps the header's column names to their positions.
func csvColumns(header []string) (map[string]int, error) {
	index := map[string]int{}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))
		known := false
		for _, c := range inputColumns {
			known = known || c == name
		}
		if !known {
			return nil, usagef("CSV header: unknown column %q (columns: %s)", name, strings.Join(inputColumns, ", "))
		}
		if _, twice := index[name]; twice {
			return nil, usagef("CSV header: column %q twice", name)
		}
		index[name] = i
	}
	if _, ok := index["identifier"]; !ok {
		return nil, usagef("CSV header: no identifier column (columns: %s)", strings.Join(inputColumns, ", "))
	}
	return index, nil
}

// creation checks one task's fields the way the repository will, so that
// a bad line stops the push before anything is written.
func creation(identifier, input, reference, notBefore string, now time.Time) (taskapi.Creation, error) {
	c := taskapi.Creation{Identifier: identifier, Input: input, Reference: reference}
	if notBefore != "" {
		t, err := parseNotBefore(notBefore, now)
		if err != nil {
			return c, err
		}
		c.NotBefore = t
	}
	if err := check.Creation(c); err != nil {
		return c, err
	}
	return c, nil
}

// parseNotBefore reads a not-before time: a timestamp, or a duration
// meaning that long from now ("10m" or "+10m").
func parseNotBefore(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "+")); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("not_before %q: a duration counts from now and cannot be negative", s)
		}
		return now.Add(d), nil
	}
	if t, ok := parseTimestamp(s); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("not_before %q is neither a time (2026-11-24T10:00:00Z) nor a duration from now (+10m)", s)
}

// countingReader tells progress how many bytes went through it.
type countingReader struct {
	r        io.Reader
	progress func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.progress != nil && n > 0 {
		c.progress(n)
	}
	return n, err
}
