package conformance

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskrepo/taskrepo/taskapi"
)

// hostileValues returns distinct values, each valid as a name of at most
// limit bytes (limit at least 250), that SQL pasted together from text, a
// LIKE pattern, a naive escape, a folding collation or a mangled partition
// name would damage, lose or confuse with another: quotes, backslashes, semicolons, SQL
// fragments, placeholders and LIKE wildcards; Unicode (CJK, emoji,
// combining characters, right-to-left text); control characters other
// than NUL; pairs that differ only where a collation or a mangled name
// would not (case, trailing space, composed and decomposed accents, dot
// and underscore); and values of exactly limit bytes, in ASCII and in
// characters of two, three and four bytes.
func hostileValues(limit int) []namedValue {
	return []namedValue{
		{"quote", "it's"},
		{"double quote", `say "hi"`},
		{"backslash", `back\slash\`},
		{"escaped quote", `\'`},
		{"semicolon", "a;b"},
		{"injection", "'); DROP TABLE task; --"},
		{"injection in double quotes", `"); DROP TABLE task_topic; --`},
		{"placeholder", "$1"},
		{"dollar quote", "$$x$$"},
		{"question mark", "?"},
		{"named parameters", ":name @var"},
		{"percent", "%"},
		{"underscore", "_"},
		{"LIKE pattern", "a%b_c"},
		{"comment end", "*/"},
		{"comment start", "/* x"},
		{"backticks", "`t`"},
		{"query token", "{topicFilter}"},
		{"CJK", "任务队列"},
		{"emoji", "🚀📦"},
		{"emoji sequence", "👩‍💻"},
		{"combining accent", "e\u0301"},
		{"composed accent", "\u00e9"},
		{"right to left", "مهمة"},
		{"right-to-left override", "\u202eabc"},
		{"zero width space", "a\u200bb"},
		{"byte order mark", "\ufeffx"},
		{"tab", "a\tb"},
		{"newline", "a\nb"},
		{"carriage return", "a\r\nb"},
		{"escape sequence", "\x1b[31mred\x1b[0m"},
		{"DEL and C1", "\x7f\u0085"},
		{"a single space", " "},
		{"lower case", "a"},
		{"upper case", "A"},
		{"trailing space", "a "},
		{"leading space", " a"},
		{"dot", "a.b"},
		{"underscore between", "a_b"},
		{"slash", "a/b"},
		{"limit in ASCII", fill(limit, `';"\%_`)},
		{"limit in 2-byte characters", fill(limit, "é")},
		{"limit in 3-byte characters", fill(limit, "任")},
		{"limit in 4-byte characters", fill(limit, "😀")},
	}
}

// fill returns unit repeated, then padded with "x", to exactly n bytes.
func fill(n int, unit string) string {
	s := strings.Repeat(unit, n/len(unit))
	return s + strings.Repeat("x", n-len(s))
}

// hostileValuesOnly returns the values of vs.
func hostileValuesOnly(vs []namedValue) []string {
	values := make([]string, len(vs))
	for i, v := range vs {
		values[i] = v.value
	}
	return values
}

// testHostile checks that hostile names and texts (hostileValues) are
// stored and returned verbatim by every call that returns them, that names
// differing only where a collation or a mangled name would not stay apart,
// and that topics with such names get partitions of their own.
func testHostile[Tx any](t *testing.T, b Backend[Tx]) {
	all := map[string]func(t *testing.T){}

	// Every hostile topic is registered, listed and counted under its own
	// name, holds only its own tasks (so pairs such as "a" and "A", "a.b"
	// and "a_b" are not one partition), reports its results and its
	// activation under its name, and destroying one leaves every other
	// topic and its tasks as they were.
	all["TopicsKeepTheirNamesAndTheirTasks"] = func(t *testing.T) {
		h := hostileSetup(t, b)
		topics := hostileValuesOnly(hostileValues(taskapi.MaxTopicLength))
		tasks := h.topicsWithATask(topics)
		h.wantEachTopicHoldsItsTask(tasks)
		for _, topic := range topics {
			h.pollExactly(h.repo, topic, tasks[topic])
			h.must(h.repo.Complete(h.ctx, h.db, topic, ppcDone(tasks[topic], taskapi.Failure, topic)), "Complete(%q)", topic)
		}
		wantResults := map[string]map[taskapi.Result]int64{}
		for _, topic := range topics {
			wantResults[topic] = map[taskapi.Result]int64{taskapi.Failure: 1}
		}
		wantCount(t, "Results", h.results(time.Time{}, time.Time{}), wantResults)
		h.wantActivationsByName(topics)
		for _, doomed := range []string{"'); DROP TABLE task; --", "a", "a.b", "e\u0301", topics[len(topics)-1]} {
			h.destroyOnly(doomed)
		}
	}

	// Hostile identifiers, references, inputs and outputs come back
	// verbatim from Push, Poll, Page, Lookup, Revive and Join; they match
	// filters of Page and Count exactly (a wildcard matches only itself);
	// Complete and Reassign store hostile outputs and Defer defers tasks of hostile
	// identifiers, in a topic with a hostile name.
	all["TextsComeBackVerbatim"] = func(t *testing.T) {
		const topic = `t'"\;%_*/`
		h := hostileSetup(t, b, topic)
		values := hostileValues(taskapi.MaxIdentifierLength)
		pushed := h.pushHostile(topic, values, false)
		h.wantFilteredAlone(topic, values, pushed)
		polled := h.poll(topic, len(values))
		ppcWantTasks(t, "Poll of the hostile tasks", polled, pushed)
		for i, task := range polled {
			h.must(h.repo.Complete(h.ctx, h.db, topic, ppcDone(task, taskapi.Failure, values[i].value)), "Complete %s", values[i].name)
			if got := h.info(topic, task.Sequence).Output; got != values[i].value {
				t.Errorf("output %s came back as %q", values[i].name, got)
			}
			note := "reassigned: " + values[i].value
			h.must(h.repo.Reassign(h.ctx, h.db, topic, taskapi.Assignment{Task: task, Result: taskapi.Failure, Output: note}),
				"Reassign with the output %s", values[i].name)
			if got := h.info(topic, task.Sequence).Output; got != note {
				t.Errorf("output %s given by Reassign came back as %q", values[i].name, got)
			}
		}
		revivals := h.revive(topic, taskapi.ReviveAppend, taskapi.Failed, taskapi.Unbounded, len(values))
		revived := make([]taskapi.Task, len(revivals))
		for i, r := range revivals {
			revived[i] = r.Current
			if r.Previous != pushed[i] || r.Current.Identifier != values[i].value || r.Current.Input != pushed[i].Input {
				t.Errorf("revival of %s = %+v, want %+v with the same identifier and input", values[i].name, r, pushed[i])
			}
		}
		until := time.Now().Add(time.Hour)
		h.must(h.repo.Defer(h.ctx, h.db, topic, until, revived...), "Defer of the hostile tasks")
		for i, task := range revived {
			if info := h.info(topic, task.Sequence); !info.NotBefore.Equal(deferredTime(until)) || info.Reference != values[i].value {
				t.Errorf("deferred task of %s = %s", values[i].name, ppcFormat(info))
			}
		}
		h.wantJoinedAlone(topic, values)
	}

	// Identifiers that a folding collation, a LIKE pattern or a trimmed
	// comparison would take for one another are different identifiers:
	// Replace makes only the older tasks of the very same identifier
	// Redundant, and a SingularByIdentifier poll takes one task of each.
	all["LookAlikeIdentifiersStayApart"] = func(t *testing.T) {
		const topic = "t"
		h := hostileSetup(t, b, topic)
		ids := []string{"a", "A", "a ", " a", "a.b", "a_b", "a%", "%", "_", "\u00e9", "e\u0301", "ß", "ss"}
		first := h.pushIDs(topic, ids...)
		for i, id := range ids {
			before := h.snapshot(topic)
			newer := h.push(topic, taskapi.Replace, taskapi.Creation{Identifier: id})[0]
			h.want(topic, first[i].Sequence, taskapi.Redundant, taskapi.Ready)
			h.unchanged(before, first[i].Sequence, newer.Sequence)
		}
		polled := h.poll(topic, 2*len(ids), taskapi.SingularByIdentifier)
		if got := ppcIDs(polled); !slices.Equal(got, ids) {
			t.Errorf("SingularByIdentifier poll took identifiers %q, want each of %q once", got, ids)
		}
	}

	// Hostile owner names are registered, listed by Owners, recorded on
	// the tasks they poll, and named in the terms they lead.
	all["OwnersKeepTheirNames"] = func(t *testing.T) {
		const topic = "t"
		h := hostileSetup(t, b, topic)
		owners := hostileValuesOnly(hostileValues(taskapi.MaxOwnerLength))
		for _, name := range owners {
			repo := h.owner(name)
			task := h.pushIDs(topic, "for "+name)[0]
			h.pollExactly(repo, topic, task)
			if got := h.info(topic, task.Sequence).Owner; got != name {
				t.Errorf("the owner of a task polled by %q is %q", name, got)
			}
		}
		wantStrings(t, "Owners", h.others(time.Hour), slices.Sorted(slices.Values(owners)))
		h.wantLeadersByName(owners)
	}

	cases(t, all)
}

// hostileEnv is a world with the helpers of the hostile cases.
type hostileEnv[Tx any] struct {
	*world[Tx]
}

// hostileSetup opens a fresh database like setup and wraps it.
func hostileSetup[Tx any](t *testing.T, b Backend[Tx], topics ...string) *hostileEnv[Tx] {
	t.Helper()
	return &hostileEnv[Tx]{world: worldOf(setup(t, b, topics...))}
}

// topicsWithATask registers every topic, checks that it is new and listed
// verbatim, and pushes one task named after it into each.
func (h *hostileEnv[Tx]) topicsWithATask(topics []string) map[string]taskapi.Task {
	h.t.Helper()
	tasks := map[string]taskapi.Task{}
	for _, topic := range topics {
		created, err := h.repo.Initialize(h.ctx, h.db, topic)
		h.must(err, "Initialize(%q)", topic)
		if !created {
			h.t.Errorf("Initialize(%q) = false, want a topic of its own", topic)
		}
		tasks[topic] = h.push(topic, taskapi.Append, taskapi.Creation{Identifier: topic, Reference: topic, Input: topic})[0]
	}
	h.wantTopics(slices.Sorted(slices.Values(topics))...)
	return tasks
}

// wantEachTopicHoldsItsTask fails the test unless every topic holds exactly
// its own task, as Page and Count (in all, and filtered by the topic) see.
func (h *hostileEnv[Tx]) wantEachTopicHoldsItsTask(tasks map[string]taskapi.Task) {
	h.t.Helper()
	counts := map[string]map[taskapi.State]taskapi.Summary{}
	for topic, task := range tasks {
		counts[topic] = map[taskapi.State]taskapi.Summary{taskapi.Ready: {Count: 1, Bound: task.Sequence}}
		infos := h.all(topic)
		if len(infos) != 1 || infos[0].Task != task || infos[0].Reference != topic {
			h.t.Errorf("topic %q holds %s, want only its task %d", topic, describe(infos), task.Sequence)
		}
		only := h.count(taskapi.Total, taskapi.Counting{Topic: topic}, taskapi.Unbounded)
		wantCount(h.t, "Count of topic "+topic, only, map[string]map[taskapi.State]taskapi.Summary{topic: counts[topic]})
	}
	wantCount(h.t, "Count", h.count(taskapi.Total, taskapi.Counting{}, taskapi.Unbounded), counts)
}

// wantActivationsByName pauses every topic, where the repository is an
// Activator, and fails the test unless Activations lists each by its name.
func (h *hostileEnv[Tx]) wantActivationsByName(topics []string) {
	h.t.Helper()
	activator, ok := h.repo.(taskapi.Activator[Tx])
	if !ok {
		return
	}
	want := map[string]taskapi.Activation{}
	for _, topic := range topics {
		h.must(activator.SetActivation(h.ctx, h.db, topic, taskapi.Paused), "SetActivation(%q)", topic)
		want[topic] = taskapi.Paused
	}
	got, err := activator.Activations(h.ctx, h.db)
	h.must(err, "Activations")
	if !maps.Equal(got, want) {
		h.t.Errorf("Activations = %q, want every hostile topic paused", slices.Sorted(maps.Keys(got)))
	}
}

// destroyOnly destroys topic and fails the test unless every other topic
// and its tasks stayed as they were, and topic is gone with its tasks.
func (h *hostileEnv[Tx]) destroyOnly(topic string) {
	h.t.Helper()
	others := slices.DeleteFunc(h.topics(), func(s string) bool { return s == topic })
	before := h.snapshot(others...)
	destroyed, err := h.repo.Destroy(h.ctx, h.db, topic)
	h.must(err, "Destroy(%q)", topic)
	if !destroyed {
		h.t.Errorf("Destroy(%q) = false, want true", topic)
	}
	h.wantTopics(others...)
	if !h.unchanged(before) {
		h.t.Errorf("destroying %q changed other topics", shortName(topic))
	}
	if infos := h.all(topic); len(infos) != 0 {
		h.t.Errorf("destroyed topic %q still holds %s", shortName(topic), describe(infos))
	}
}

// pushHostile pushes one task per value, the value as identifier and
// reference and, made longer, as input, and fails the test unless Push and
// Lookup return every field verbatim.
func (h *hostileEnv[Tx]) pushHostile(topic string, values []namedValue, suspended bool) []taskapi.Task {
	h.t.Helper()
	creations := make([]taskapi.Creation, len(values))
	for i, v := range values {
		creations[i] = taskapi.Creation{Identifier: v.value, Reference: v.value, Input: v.value + "\n" + v.value, Suspended: suspended}
	}
	pushed := h.push(topic, taskapi.Append, creations...)
	for i, task := range pushed {
		c := creations[i]
		if task.Identifier != c.Identifier || task.Input != c.Input {
			h.t.Errorf("Push returned %q, %q for %s", task.Identifier, task.Input, values[i].name)
		}
		if info := h.info(topic, task.Sequence); info.Identifier != c.Identifier || info.Reference != c.Reference || info.Input != c.Input {
			h.t.Errorf("Lookup of %s = %s", values[i].name, ppcFormat(info))
		}
	}
	return pushed
}

// wantFilteredAlone fails the test unless a Page or Count filtered by the
// identifier or the reference of a value finds exactly its task.
func (h *hostileEnv[Tx]) wantFilteredAlone(topic string, values []namedValue, tasks []taskapi.Task) {
	h.t.Helper()
	for i, v := range values {
		want := map[string]map[taskapi.State]taskapi.Summary{topic: {taskapi.Ready: {Count: 1, Bound: tasks[i].Sequence}}}
		for field, listing := range map[string]taskapi.Listing{"identifier": {Identifier: v.value}, "reference": {Reference: v.value}} {
			got := h.page(topic, listing, taskapi.Inception, 100, taskapi.Forward)
			wantSeqs(h.t, "Page by the "+field+" "+v.name, got, seqsOf(tasks[i]))
			counting := taskapi.Counting{Topic: topic, Identifier: listing.Identifier, Reference: listing.Reference}
			wantCount(h.t, "Count by the "+field+" "+v.name, h.count(taskapi.Recent, counting, taskapi.Unbounded), want)
		}
	}
}

// wantJoinedAlone pushes a Suspended task per value and joins each value
// alone: Join must name it verbatim and release its task only.
func (h *hostileEnv[Tx]) wantJoinedAlone(topic string, values []namedValue) {
	h.t.Helper()
	suspended := h.pushHostile(topic, values, true)
	for i, v := range values {
		before := h.snapshot(topic)
		released, err := h.repo.Join(h.ctx, h.db, topic, taskapi.Singular, []string{v.value})
		h.must(err, "Join of %s", v.name)
		wantStrings(h.t, "Join of "+v.name, released, []string{v.value})
		h.want(topic, suspended[i].Sequence, taskapi.Ready, taskapi.Ready)
		h.unchanged(before, suspended[i].Sequence)
	}
}

// wantLeadersByName leads a topic named after each owner with that owner,
// where the repository is a Leader, and fails the test unless the term
// names both verbatim.
func (h *hostileEnv[Tx]) wantLeadersByName(owners []string) {
	h.t.Helper()
	if _, ok := h.repo.(taskapi.Leader[Tx]); !ok {
		return
	}
	for _, name := range owners {
		_, err := h.repo.Initialize(h.ctx, h.db, name)
		h.must(err, "Initialize(%q)", name)
		repo, err := h.b.New(name)
		h.must(err, "New(%q)", name)
		term, ok, err := extension[taskapi.Leader[Tx]](h.t, repo).Lead(h.ctx, h.db, name, time.Minute)
		h.must(err, "Lead(%q) by %q", name, name)
		if !ok || term.Topic != name || term.Owner != name {
			h.t.Errorf("Lead by %q = %s, %v; want a term of its topic led by it", name, termString(term), ok)
		}
	}
}
