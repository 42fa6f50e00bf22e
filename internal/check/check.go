// Package check validates the arguments of repository calls, the same way for
// every implementation. Every error it returns wraps taskapi.ErrInvalidArgument.
package check

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Topic checks a topic name: non-empty, at most 250 bytes, valid UTF-8, no NUL.
func Topic(topic string) error { return name("topic", topic, taskapi.MaxTopicLength) }

// Owner checks an owner name: non-empty, at most 250 bytes, valid UTF-8, no NUL.
func Owner(owner string) error { return name("owner", owner, taskapi.MaxOwnerLength) }

// Identifier checks a task identifier: non-empty, at most 500 bytes, valid UTF-8, no NUL.
func Identifier(identifier string) error {
	return name("identifier", identifier, taskapi.MaxIdentifierLength)
}

// Reference checks an optional task reference: at most 500 bytes, valid UTF-8, no NUL.
func Reference(reference string) error {
	if reference == "" {
		return nil
	}
	return name("reference", reference, taskapi.MaxReferenceLength)
}

// Text checks free text such as an input or an output: valid UTF-8, no NUL.
func Text(kind, text string) error {
	if !utf8.ValidString(text) {
		return fmt.Errorf("%s is not valid UTF-8: %w", kind, taskapi.ErrInvalidArgument)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL byte: %w", kind, taskapi.ErrInvalidArgument)
	}
	return nil
}

func name(kind, value string, limit int) error {
	switch {
	case value == "":
		return fmt.Errorf("%s is empty: %w", kind, taskapi.ErrInvalidArgument)
	case len(value) > limit:
		return fmt.Errorf("%s %q is %d bytes long, over the limit of %d: %w",
			kind, Short(value), len(value), limit, taskapi.ErrInvalidArgument)
	}
	return Text(kind, value)
}

// Creation checks the fields of a creation.
func Creation(c taskapi.Creation) error {
	if err := Identifier(c.Identifier); err != nil {
		return err
	}
	if err := Reference(c.Reference); err != nil {
		return err
	}
	if err := NotBefore(c.NotBefore); err != nil {
		return err
	}
	return Text("input", c.Input)
}

// NotBefore checks that a time is zero or within the years every database
// stores.
func NotBefore(t time.Time) error { return storable("not-before time", t) }

// storable checks that a time of kind is zero or within the years MinYear to
// MaxYear, which every database stores.
func storable(kind string, t time.Time) error {
	if y := t.UTC().Year(); !t.IsZero() && (y < taskapi.MinYear || y > taskapi.MaxYear) {
		return fmt.Errorf("%s %v lies outside the years %d to %d: %w",
			kind, t, taskapi.MinYear, taskapi.MaxYear, taskapi.ErrInvalidArgument)
	}
	return nil
}

// Duration checks that a duration is not negative.
func Duration(kind string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%s %v is negative: %w", kind, d, taskapi.ErrInvalidArgument)
	}
	return nil
}

// Enum checks that an enum value is one of its defined values.
func Enum[E interface {
	Valid() bool
	String() string
}](e E) error {
	if !e.Valid() {
		return fmt.Errorf("%v is not defined: %w", e, taskapi.ErrInvalidArgument)
	}
	return nil
}

// States checks that every state is defined and, when allowed is not nil,
// allowed for the call.
func States(states []taskapi.State, allowed func(taskapi.State) bool) error {
	for _, s := range states {
		if err := Enum(s); err != nil {
			return err
		}
		if allowed != nil && !allowed(s) {
			return fmt.Errorf("state %v is not allowed here: %w", s, taskapi.ErrInvalidArgument)
		}
	}
	return nil
}

// Revivable checks that state is one a task can be revived or reassigned
// from: Expired, Failed, Suspended, Filtered or Succeeded.
func Revivable(state taskapi.State) error {
	return States([]taskapi.State{state}, taskapi.State.Revivable)
}

// Polling is what Poll's options ask for: the order and the condition of
// the poll, whether it awaits revival, when Term is not nil, the term under
// which it claims tasks, and the note of limits to fill.
type Polling struct {
	Order     taskapi.Order
	Condition taskapi.Condition
	// AwaitRevival says that a conditional poll waits behind an Expired
	// task of the candidate's identifier too (taskapi.AwaitRevival).
	AwaitRevival bool
	Term         *taskapi.Term
	// Note, when not nil, learns whether limits held the poll back.
	Note *taskapi.LimitNote
}

// Blocking returns the states of the other tasks of a candidate's
// identifier that keep a conditional poll from taking it, besides the
// earlier Ready ones: Active, the Blocking states of the condition, and
// Expired when the poll awaits revival (once: the conditions that block
// on Expired already stay as they are). It is nil for an unconditional
// poll. The backends pass it to the conditional poll statement as
// parameters (an array on taskpg, a list on taskansi), so that
// AwaitRevival changes the statement's arguments, not its plan.
func (p Polling) Blocking() []taskapi.State {
	if p.Condition == taskapi.Unconditional {
		return nil
	}
	blocking := append([]taskapi.State{taskapi.Active}, p.Condition.Blocking()...)
	if p.AwaitRevival && !slices.Contains(blocking, taskapi.Expired) {
		blocking = append(blocking, taskapi.Expired)
	}
	return blocking
}

// pollOptions resolves Poll's options. The default is FIFO, Unconditional;
// an option given twice must say the same both times (FIFO with LIFO, or
// two conditions, contradict each other), and AwaitRevival given twice
// says it once. A Term is accepted once, with a Number of 1 or more; Poll
// checks its topic and owner.
func pollOptions(opts []taskapi.PollOption) (Polling, error) {
	p := Polling{Order: taskapi.FIFO, Condition: taskapi.Unconditional}
	var ordered, limited bool // an order, a condition was given
	for _, opt := range opts {
		var err error
		switch o := opt.(type) {
		case taskapi.Order:
			err = once(&p.Order, &ordered, o)
		case taskapi.Condition:
			err = once(&p.Condition, &limited, o)
		case taskapi.AwaitRevival:
			p.AwaitRevival = true
		case taskapi.Term:
			err = oneTerm(&p, o)
		case *taskapi.LimitNote:
			err = oneNote(&p, o)
		default:
			err = fmt.Errorf("poll option %v is not supported: %w", opt, taskapi.ErrInvalidArgument)
		}
		if err != nil {
			return Polling{}, err
		}
	}
	return p, nil
}

// oneNote sets the note of p to note, unless p has one already or note is
// nil.
func oneNote(p *Polling, note *taskapi.LimitNote) error {
	switch {
	case note == nil:
		return fmt.Errorf("a nil *LimitNote: %w", taskapi.ErrInvalidArgument)
	case p.Note != nil && p.Note != note:
		return fmt.Errorf("a poll takes one *LimitNote: %w", taskapi.ErrInvalidArgument)
	}
	p.Note = note
	return nil
}

// oneTerm sets the term of p to term, unless p has one already or term's
// Number is below one, which no term has.
func oneTerm(p *Polling, term taskapi.Term) error {
	if p.Term != nil {
		return fmt.Errorf("a poll takes one term, not %d and %d: %w", p.Term.Number, term.Number, taskapi.ErrInvalidArgument)
	}
	if err := termNumber(term); err != nil {
		return err
	}
	p.Term = &term
	return nil
}

// once sets *value to a valid option o, unless another option of its kind
// was set before (*set).
func once[E interface {
	comparable
	Valid() bool
	String() string
}](value *E, set *bool, o E) error {
	if err := Enum(o); err != nil {
		return err
	}
	if *set && *value != o {
		return fmt.Errorf("poll options %v and %v contradict each other: %w", *value, o, taskapi.ErrInvalidArgument)
	}
	*value, *set = o, true
	return nil
}

// LockTableFull explains PostgreSQL's "out of shared memory" (SQLSTATE
// 53200) in the errors of both backends: the server's lock table holds
// max_locks_per_transaction locks per connection, shared by all sessions,
// and a transaction keeps the locks on every partition (topic) it touched
// until it ends.
const LockTableFull = "PostgreSQL's lock table is full: a transaction keeps a lock on each topic's partition " +
	"and its indexes until it ends; run calls that span many topics on a pool, not inside a transaction, " +
	"or raise max_locks_per_transaction"

// maxShown is how many bytes of a user's text an error message repeats.
const maxShown = 64

// Short returns s, or its first bytes followed by "…" when it is long, for
// error messages: a message never repeats a huge argument in full.
func Short(s string) string {
	if len(s) <= maxShown {
		return s
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Push checks the arguments of Push — the topic, the insertion and every
// creation — and reports whether there is a task to push.
func Push(topic string, insertion taskapi.Insertion, creations []taskapi.Creation) (bool, error) {
	return ran(len(creations) > 0, pushing(topic, insertion, creations))
}

// pushing checks Push's topic, insertion and creations.
func pushing(topic string, insertion taskapi.Insertion, creations []taskapi.Creation) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if err := Enum(insertion); err != nil {
		return err
	}
	for _, c := range creations {
		if err := Creation(c); err != nil {
			return err
		}
	}
	return nil
}

// Completions checks the arguments of Complete — the topic and every
// decision's result and output — and reports whether there is a task to
// complete.
func Completions(topic string, completions []taskapi.Completion) (bool, error) {
	return ran(len(completions) > 0, outcomes(topic, len(completions), func(i int) (taskapi.Result, string) {
		return completions[i].Decision.Result, completions[i].Decision.Output
	}))
}

// Assignments checks the arguments of Reassign — the topic and every
// assignment's result and output — and reports whether there is a task to
// reassign.
func Assignments(topic string, assignments []taskapi.Assignment) (bool, error) {
	return ran(len(assignments) > 0, outcomes(topic, len(assignments), func(i int) (taskapi.Result, string) {
		return assignments[i].Result, assignments[i].Output
	}))
}

// outcomes checks topic and the n results and outputs that at gives.
func outcomes(topic string, n int, at func(int) (taskapi.Result, string)) error {
	if err := Topic(topic); err != nil {
		return err
	}
	for i := range n {
		result, output := at(i)
		if err := Enum(result); err != nil {
			return err
		}
		if err := Text("output", output); err != nil {
			return err
		}
	}
	return nil
}

// Join checks the arguments of Join: the topic, the junction and every
// identifier of every group.
func Join(topic string, junction taskapi.Junction, groups [][]string) error {
	if err := Topic(topic); err != nil {
		return err
	}
	if err := Enum(junction); err != nil {
		return err
	}
	for _, group := range groups {
		for _, id := range group {
			if err := Identifier(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Filter checks the filter of Page and Count: defined states, and the
// reference and identifier when they are not empty (empty filters nothing).
func Filter(states []taskapi.State, reference, identifier string) error {
	if err := States(states, nil); err != nil {
		return err
	}
	if err := Reference(reference); err != nil {
		return err
	}
	if identifier == "" {
		return nil
	}
	return Identifier(identifier)
}
