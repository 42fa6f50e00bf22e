package web

import (
	"strconv"
	"strings"

	"github.com/taskrepo/taskrepo/taskapi"
)

// An action names its tasks by sequence in its link and in its
// confirmation's form, up to maxSelected of them, with the state each was
// shown in. Written one value a task, ten thousand tasks make a link of
// some 200 KB, more than a reverse proxy takes in a request line (nginx:
// 8 KB by default). So runs are written short: consecutive sequences as
// "FROM-TO" (seq=100-250), and a state repeated as "STATE*N"
// (was=FAILED*151). Both read one value a task too.

// seqValues writes sequences, ascending, as form values: a run of three
// or more consecutive ones as FROM-TO.
func seqValues(seqs []int64) []string {
	var out []string
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] == seqs[j]+1 {
			j++
		}
		if j-i >= 2 {
			out = append(out, strconv.FormatInt(seqs[i], 10)+"-"+strconv.FormatInt(seqs[j], 10))
			i = j + 1
			continue
		}
		out = append(out, strconv.FormatInt(seqs[i], 10))
		i++
	}
	return out
}

// parseSeqValues reads the sequences of values (each a sequence, a run
// FROM-TO, or several of these separated by commas), ascending and each
// once; more than limit is refused before any run is spelled out.
func parseSeqValues(name string, values []string, limit int) ([]int64, error) {
	var seqs []int64
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part == "" {
				continue
			}
			from, to, err := parseRun(name, part)
			if err != nil {
				return nil, err
			}
			if to-from >= int64(limit-len(seqs)) {
				return nil, badRequest("%s: more than %d tasks: at most %d at a time; give a state and a range instead", name, limit, limit)
			}
			for seq := from; seq <= to; seq++ {
				seqs = append(seqs, seq)
			}
		}
	}
	return seqs, nil
}

// parseRun reads one sequence, or a run FROM-TO, of positive sequences.
func parseRun(name, part string) (from, to int64, err error) {
	first, last, isRun := strings.Cut(part, "-")
	from, err = strconv.ParseInt(first, 10, 64)
	to = from
	if err == nil && isRun {
		to, err = strconv.ParseInt(last, 10, 64)
	}
	switch {
	case err != nil || from <= 0:
		return 0, 0, badRequest("%s %q: not a sequence, nor a run of them (100-250)", name, part)
	case to < from:
		return 0, 0, badRequest("%s %q: the run ends before it begins", name, part)
	}
	return from, to, nil
}

// wasValues writes the states tasks were shown in, in the order of their
// sequences: a state repeated as STATE*N.
func wasValues(states []taskapi.State) []string {
	var out []string
	for i := 0; i < len(states); {
		j := i
		for j+1 < len(states) && states[j+1] == states[i] {
			j++
		}
		if n := j - i + 1; n > 1 {
			out = append(out, states[i].String()+"*"+strconv.Itoa(n))
		} else {
			out = append(out, states[i].String())
		}
		i = j + 1
	}
	return out
}

// parseWasValues reads the states of values (STATE, or STATE*N), n of
// them: one for each task named.
func parseWasValues(values []string, n int) ([]taskapi.State, error) {
	states := make([]taskapi.State, 0, n)
	for _, v := range values {
		name, times, repeated := strings.Cut(v, "*")
		state, err := taskapi.ParseState(name)
		if err != nil {
			return nil, badRequest("%s %q: not a state", wasField, v)
		}
		count := 1
		if repeated {
			if count, err = strconv.Atoi(times); err != nil || count < 1 {
				return nil, badRequest("%s %q: not a state repeated a number of times (FAILED*12)", wasField, v)
			}
		}
		if count > n-len(states) {
			return nil, badRequest("%s: more states than the %d tasks named: the states the confirmation showed do not match; open the confirmation again", wasField, n)
		}
		for range count {
			states = append(states, state)
		}
	}
	if len(states) != n {
		return nil, badRequest("%s: %d states for %d tasks: the states the confirmation showed are missing; open the confirmation again",
			wasField, len(states), n)
	}
	return states, nil
}
