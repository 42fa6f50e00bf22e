package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// hostile are identifiers, inputs and references that try to break out of
// SQL, JSON, CSV or the terminal.
var hostile = []string{
	`it's`, `"; DROP TABLE task; --`, `') OR 1=1 --`, `a;b`, `\x00`, `%s%n`,
	"日本語のタスク", "emoji 🚀", "tab\there", "line\nbreak", "\x1b[2J\x1b[31mred", "<script>alert(1)</script>",
	strings.Repeat("é", 250), // 500 bytes: the longest identifier
}

// TestHostileStringsAreStoredVerbatim pushes hostile text as identifiers,
// inputs and references into a topic with a hostile name, on each backend,
// and reads it back unchanged.
func TestHostileStringsAreStoredVerbatim(t *testing.T) {
	for _, b := range backends(true) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			topic := `to"p'ic; DROP TABLE task_topic --`
			must(t, db, "topic", "init", topic)
			var lines strings.Builder
			for _, s := range hostile {
				line, _ := json.Marshal(map[string]string{"identifier": s, "input": s, "reference": clipBytes(s, 500)})
				lines.Write(append(line, '\n'))
			}
			if out := taskctl(t, db, lines.String(), "push", "-t", topic, "--file", "-"); out.code != 0 {
				t.Fatalf("push: %+v", out)
			}
			got := listed(t, db, "-t", topic, "--limit", "100")
			if len(got) != len(hostile) {
				t.Fatalf("list: %d tasks, want %d", len(got), len(hostile))
			}
			for i, task := range got {
				if task.Identifier != hostile[i] || task.Input != hostile[i] || task.Reference != hostile[i] || task.Topic != topic {
					t.Errorf("task %d: %+v, want %q everywhere", i, task, hostile[i])
				}
			}
			for _, text := range []string{must(t, db, "list", "-t", topic), must(t, db, "show", "-t", topic, "11")} {
				if strings.Contains(text, "\x1b") {
					t.Errorf("an escape sequence from a task reached the terminal: %q", text)
				}
			}
			wantStates(t, db, topic, map[string]int64{"READY": int64(len(hostile))})
		})
	}
}

// clipBytes cuts s to at most n bytes.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
