package check_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/taskrepo/taskrepo/internal/check"
	"github.com/taskrepo/taskrepo/taskapi"
)

func TestNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		check func(string) error
		value string
		ok    bool
	}{
		{"topic", check.Topic, "orders", true},
		{"topic at limit", check.Topic, strings.Repeat("t", 250), true},
		{"topic multi-byte at limit", check.Topic, strings.Repeat("é", 125), true},
		{"topic over limit", check.Topic, strings.Repeat("t", 251), false},
		{"topic empty", check.Topic, "", false},
		{"topic NUL", check.Topic, "a\x00b", false},
		{"topic invalid UTF-8", check.Topic, "a\xffb", false},
		{"owner", check.Owner, "worker-1", true},
		{"owner over limit", check.Owner, strings.Repeat("o", 251), false},
		{"owner empty", check.Owner, "", false},
		{"identifier at limit", check.Identifier, strings.Repeat("i", 500), true},
		{"identifier over limit", check.Identifier, strings.Repeat("i", 501), false},
		{"identifier empty", check.Identifier, "", false},
		{"identifier NUL", check.Identifier, "\x00", false},
		{"reference empty", check.Reference, "", true},
		{"reference at limit", check.Reference, strings.Repeat("r", 500), true},
		{"reference over limit", check.Reference, strings.Repeat("r", 501), false},
		{"reference invalid UTF-8", check.Reference, "\xc3", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.check(tt.value)
			if tt.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tt.ok && !errors.Is(err, taskapi.ErrInvalidArgument) {
				t.Fatalf("error = %v, want ErrInvalidArgument", err)
			}
		})
	}
}

func TestTextAllowsAnythingButNULAndBadUTF8(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20)
	for _, ok := range []string{"", long, "ünïcödé 🚀", "line\nbreak"} {
		if err := check.Text("input", ok); err != nil {
			t.Errorf("Text(%.20q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"nul\x00", "\xff\xfe"} {
		if err := check.Text("input", bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Text(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

func TestCreation(t *testing.T) {
	t.Parallel()
	good := taskapi.Creation{Identifier: "id", Input: "in", Reference: "ref"}
	if err := check.Creation(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []taskapi.Creation{
		{Identifier: ""},
		{Identifier: "id", Input: "\x00"},
		{Identifier: "id", Reference: strings.Repeat("r", 501)},
	} {
		if err := check.Creation(bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Creation(%+v) = %v", bad, err)
		}
	}
}

func TestDurationAndEnums(t *testing.T) {
	t.Parallel()
	if err := check.Duration("after", 0); err != nil {
		t.Error(err)
	}
	if err := check.Duration("after", -time.Nanosecond); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("negative duration: %v", err)
	}
	if err := check.Enum(taskapi.Insertion(4)); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("Insertion(4): %v", err)
	}
	if err := check.States([]taskapi.State{taskapi.Ready, taskapi.State(10)}, nil); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("State(10): %v", err)
	}
	if err := check.Revivable(taskapi.Ready); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("Revivable(Ready): %v", err)
	}
	for s := taskapi.Expired; s <= taskapi.Succeeded; s++ {
		if err := check.Revivable(s); err != nil {
			t.Errorf("Revivable(%v): %v", s, err)
		}
	}
}

// pollOptions resolves opts as a poll of topic t by owner o.
func pollOptions(opts []taskapi.PollOption) (taskapi.Order, taskapi.Condition, error) {
	p, _, err := check.Poll("o", "t", 1, opts)
	return p.Order, p.Condition, err
}

func TestPollOptions(t *testing.T) {
	t.Parallel()
	order, cond, err := pollOptions(nil)
	if err != nil || order != taskapi.FIFO || cond != taskapi.Unconditional {
		t.Errorf("defaults = %v, %v, %v", order, cond, err)
	}
	order, cond, err = pollOptions([]taskapi.PollOption{taskapi.SingularByIdentifier, taskapi.LIFO})
	if err != nil || order != taskapi.LIFO || cond != taskapi.SingularByIdentifier {
		t.Errorf("LIFO, singular = %v, %v, %v", order, cond, err)
	}
	for _, bad := range []taskapi.PollOption{taskapi.Order(2), taskapi.Condition(-1)} {
		if _, _, err := pollOptions([]taskapi.PollOption{bad}); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	order, cond, err = pollOptions([]taskapi.PollOption{taskapi.LIFO, taskapi.SingularByIdentifier, taskapi.LIFO, taskapi.SingularByIdentifier})
	if err != nil || order != taskapi.LIFO || cond != taskapi.SingularByIdentifier {
		t.Errorf("an option repeated = %v, %v, %v; want it accepted", order, cond, err)
	}
	for _, contradiction := range [][]taskapi.PollOption{
		{taskapi.FIFO, taskapi.LIFO},
		{taskapi.LIFO, taskapi.FIFO},
		{taskapi.SingularByIdentifier, taskapi.SingularByIdentifierSuspendOnFailure},
		{taskapi.Unconditional, taskapi.SingularByIdentifier},
	} {
		if _, _, err := pollOptions(contradiction); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%v: error %v, want ErrInvalidArgument", contradiction, err)
		}
	}
}

func TestPollAwaitsRevival(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts  []taskapi.PollOption
		await bool
	}{
		{nil, false},
		{[]taskapi.PollOption{taskapi.SingularByIdentifier}, false},
		{[]taskapi.PollOption{taskapi.AwaitRevival{}}, true},
		{[]taskapi.PollOption{taskapi.LIFO, taskapi.AwaitRevival{}, taskapi.SingularByIdentifier}, true},
		{[]taskapi.PollOption{taskapi.AwaitRevival{}, taskapi.SingularByIdentifier, taskapi.AwaitRevival{}}, true},
	} {
		p, _, err := check.Poll("o", "t", 1, tt.opts)
		if err != nil || p.AwaitRevival != tt.await {
			t.Errorf("Poll(%v) = %+v, %v; want AwaitRevival %v", tt.opts, p, err, tt.await)
		}
	}
	// It contradicts nothing, but it does not hide a contradiction either.
	for _, contradiction := range [][]taskapi.PollOption{
		{taskapi.AwaitRevival{}, taskapi.FIFO, taskapi.LIFO},
		{taskapi.SingularByIdentifier, taskapi.AwaitRevival{}, taskapi.Unconditional},
		{taskapi.AwaitRevival{}, taskapi.Condition(4)},
	} {
		if _, _, err := check.Poll("o", "t", 1, contradiction); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%v: error %v, want ErrInvalidArgument", contradiction, err)
		}
	}
}

func TestPollingBlocking(t *testing.T) {
	t.Parallel()
	active, expired, failed, suspended := taskapi.Active, taskapi.Expired, taskapi.Failed, taskapi.Suspended
	for _, tt := range []struct {
		condition taskapi.Condition
		plain     []taskapi.State // without AwaitRevival
		awaiting  []taskapi.State // with it
	}{
		{taskapi.Unconditional, nil, nil},
		{taskapi.SingularByIdentifier, []taskapi.State{active}, []taskapi.State{active, expired}},
		{taskapi.SingularByIdentifierSuspendOnFailure,
			[]taskapi.State{active, expired, failed}, []taskapi.State{active, expired, failed}},
		{taskapi.SingularByIdentifierSuspendUntilSuccess,
			[]taskapi.State{active, expired, failed, suspended}, []taskapi.State{active, expired, failed, suspended}},
	} {
		for _, order := range []taskapi.Order{taskapi.FIFO, taskapi.LIFO} {
			for await, want := range map[bool][]taskapi.State{false: tt.plain, true: tt.awaiting} {
				p := check.Polling{Order: order, Condition: tt.condition, AwaitRevival: await}
				if got := p.Blocking(); !slices.Equal(got, want) || (got == nil) != (want == nil) {
					t.Errorf("%+v.Blocking() = %v, want %v", p, got, want)
				}
			}
		}
	}
}

func TestPollTakesATermOfThePollsTopicAndOwner(t *testing.T) {
	t.Parallel()
	term := taskapi.Term{Topic: "t", Owner: "o", Number: 3}
	p, _, err := check.Poll("o", "t", 1, []taskapi.PollOption{taskapi.LIFO, term, taskapi.SingularByIdentifier})
	if err != nil || p.Order != taskapi.LIFO || p.Condition != taskapi.SingularByIdentifier || p.Term == nil || *p.Term != term {
		t.Errorf("Poll with a term = %+v, %v; want LIFO, singular, %+v", p, err, term)
	}
	if p, _, err := check.Poll("o", "t", 1, nil); err != nil || p.Term != nil || p.Order != taskapi.FIFO {
		t.Errorf("Poll without options = %+v, %v; want FIFO without a term", p, err)
	}
	if order, _, err := pollOptions([]taskapi.PollOption{term, taskapi.LIFO}); err != nil || order != taskapi.LIFO {
		t.Errorf("a term and LIFO = %v, %v; want LIFO", order, err)
	}
	withTopic, withOwner, withNumber := term, term, term
	withTopic.Topic, withOwner.Owner, withNumber.Number = "u", "p", 0
	for name, opts := range map[string][]taskapi.PollOption{
		"a term of another topic": {withTopic},
		"a term of another owner": {withOwner},
		"a term number 0":         {withNumber},
		"two terms":               {term, term},
		"two different terms":     {term, withOwner},
	} {
		if _, _, err := check.Poll("o", "t", 1, opts); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Poll with %s: error %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, _, err := check.Poll("o", "", 1, []taskapi.PollOption{taskapi.Term{Owner: "o", Number: 1}}); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("Poll of an empty topic with its term: error %v, want ErrInvalidArgument", err)
	}
}

// TestHoldTakesATermOfItsOwner checks Hold's arguments: a term of a valid
// topic, numbered from 1, led by the repository's owner; any other is
// invalid, not a term Hold could report over.
func TestHoldTakesATermOfItsOwner(t *testing.T) {
	t.Parallel()
	term := taskapi.Term{Topic: "t", Owner: "o", Number: 3}
	if err := check.Hold("o", term); err != nil {
		t.Errorf("Hold of the owner's term: %v", err)
	}
	if err := check.Hold("o", taskapi.Term{Topic: "t", Owner: "o", Number: 1}); err != nil {
		t.Errorf("Hold of the owner's first term: %v", err)
	}
	withOwner, withNumber, negative, withTopic := term, term, term, term
	withOwner.Owner, withNumber.Number, negative.Number, withTopic.Topic = "p", 0, -1, "a\x00b"
	for name, bad := range map[string]taskapi.Term{
		"a term of another owner": withOwner,
		"a term number 0":         withNumber,
		"a negative term number":  negative,
		"a topic with a NUL":      withTopic,
		"the zero term":           {},
		"a term of no topic":      {Owner: "o", Number: 1},
	} {
		if err := check.Hold("o", bad); !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("Hold of %s: error %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestShortKeepsHugeTextOutOfMessages(t *testing.T) {
	t.Parallel()
	if got := check.Short("orders"); got != "orders" {
		t.Errorf("Short(orders) = %q", got)
	}
	long := strings.Repeat("é", 1<<20) // two bytes a rune: the cut must not split one
	got := check.Short(long)
	if len(got) > 70 || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("Short of 2 MiB = %q (%d bytes), want a valid prefix of at most 64 bytes and …", got, len(got))
	}
	err := check.Topic(long)
	if !errors.Is(err, taskapi.ErrInvalidArgument) || len(err.Error()) > 200 {
		t.Errorf("Topic of 2 MiB: a %d-byte error, want a short ErrInvalidArgument", len(err.Error()))
	}
}

func TestCallChecks(t *testing.T) {
	ok := []taskapi.Creation{{Identifier: "a"}}
	for name, err := range map[string]error{
		"Push bad topic":         verdict(check.Push("", taskapi.Append, ok)),
		"Push bad insertion":     verdict(check.Push("t", taskapi.Insertion(9), ok)),
		"Push bad creation":      verdict(check.Push("t", taskapi.Append, []taskapi.Creation{{Identifier: "a\x00"}})),
		"Completions bad result": verdict(check.Completions("t", []taskapi.Completion{{Decision: taskapi.Decision{Result: 9}}})),
		"Completions bad output": verdict(check.Completions("t", []taskapi.Completion{{Decision: taskapi.Decision{Output: "\xff"}}})),
		"Assignments bad result": verdict(check.Assignments("t", []taskapi.Assignment{{Result: -1}})),
		"Assignments bad output": verdict(check.Assignments("t", []taskapi.Assignment{{Output: "a\x00"}})),
		"Join bad junction":      check.Join("t", taskapi.Junction(5), nil),
		"Join bad identifier":    check.Join("t", taskapi.Singular, [][]string{{"a", ""}}),
		"Filter bad state":       check.Filter([]taskapi.State{12}, "", ""),
		"Filter bad reference":   check.Filter(nil, "\xff", ""),
		"Filter bad identifier":  check.Filter(nil, "", "a\x00"),
	} {
		if !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%s = %v, want ErrInvalidArgument", name, err)
		}
	}
	for name, err := range map[string]error{
		"Push":        verdict(check.Push("t", taskapi.Delete, ok)),
		"Completions": verdict(check.Completions("t", []taskapi.Completion{{Decision: taskapi.Decision{Output: "x"}}})),
		"Assignments": verdict(check.Assignments("t", []taskapi.Assignment{{Result: taskapi.Success, Output: "x"}})),
		"Join":        check.Join("t", taskapi.Eternal, [][]string{{}, {"a"}}),
		"Filter":      check.Filter(nil, "", ""),
	} {
		if err != nil {
			t.Errorf("%s = %v, want nil", name, err)
		}
	}
}

func TestCalls(t *testing.T) {
	t.Parallel()
	bad := map[string]error{
		"Revive state":      verdict(check.Revive("t", taskapi.ReviveReset, taskapi.Ready, taskapi.Unbounded, 1)),
		"Revive how":        verdict(check.Revive("t", taskapi.Revivification(9), taskapi.Failed, taskapi.Unbounded, 1)),
		"ReviveTasks topic": verdict(check.ReviveTasks("", taskapi.ReviveAppend, nil)),
		"ReassignAll from":  verdict(check.ReassignAll("t", taskapi.Active, taskapi.Success, taskapi.Unbounded)),
		"ReassignAll to":    verdict(check.ReassignAll("t", taskapi.Failed, taskapi.Result(8), taskapi.Unbounded)),
		"Page direction":    verdict(check.Page("t", taskapi.Listing{}, 1, 10, taskapi.Direction(3))),
		"Page filter":       verdict(check.Page("t", taskapi.Listing{States: []taskapi.State{12}}, 1, 10, taskapi.Forward)),
		"Count snapshot":    check.Count(taskapi.Snapshot(5), taskapi.Counting{}),
		"Count topic":       check.Count(taskapi.Total, taskapi.Counting{Topic: "a\x00"}),
	}
	for name, err := range bad {
		if !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument", name, err)
		}
	}
	good := []error{
		verdict(check.Revive("t", taskapi.ReviveReset, taskapi.Expired, taskapi.Unbounded, 1)),
		verdict(check.ReassignAll("t", taskapi.Succeeded, taskapi.Failure, taskapi.Unbounded)),
		verdict(check.Page("t", taskapi.Listing{Identifier: "x"}, 1, 10, taskapi.Backward)),
		check.Count(taskapi.Recent, taskapi.Counting{}),
	}
	for i, err := range good {
		if err != nil {
			t.Errorf("good call %d: %v", i, err)
		}
	}
	if _, _, err := check.Poll("o", "", 1, nil); !errors.Is(err, taskapi.ErrInvalidArgument) {
		t.Errorf("Poll with an empty topic: %v", err)
	}
}

func TestScheduleChecks(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	bad := map[string]error{
		"Mark topic":                   check.Mark("", "s"),
		"Mark name empty":              check.Mark("t", ""),
		"Mark name over limit":         check.Mark("t", strings.Repeat("n", 501)),
		"Mark name invalid UTF-8":      check.Mark("t", "a\xffb"),
		"Mark name NUL":                check.Mark("t", "a\x00b"),
		"Advance topic":                check.Advance(strings.Repeat("t", 251), "s", time.Time{}, at),
		"Advance name":                 check.Advance("t", "", time.Time{}, at),
		"Advance to zero":              check.Advance("t", "s", time.Time{}, time.Time{}),
		"Advance to zero from set":     check.Advance("t", "s", at, time.Time{}),
		"Advance to before from":       check.Advance("t", "s", at, at.Add(-time.Hour)),
		"Advance to equal to from":     check.Advance("t", "s", at, at.In(time.FixedZone("east", 3600))),
		"Advance within a microsecond": check.Advance("t", "s", at.Add(100), at.Add(900)),
		"Advance from before MinYear":  check.Advance("t", "s", time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC), at),
		"Advance to after MaxYear":     check.Advance("t", "s", at, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
		"Advance to before MinYear":    check.Advance("t", "s", time.Time{}, time.Date(999, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	for name, err := range bad {
		if !errors.Is(err, taskapi.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument", name, err)
		}
	}
	good := map[string]error{
		"Mark":                         check.Mark("t", strings.Repeat("é", 250)),
		"Advance from zero":            check.Advance("t", "s", time.Time{}, at),
		"Advance by a microsecond":     check.Advance("t", "s", at, at.Add(time.Microsecond)),
		"Advance across time zones":    check.Advance("t", "s", at.In(time.FixedZone("west", -7200)), at.Add(time.Second)),
		"Advance at the years' bounds": check.Advance("t", "s", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
	}
	for name, err := range good {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// verdict is the error of a call's check, whatever it says about work.
func verdict(_ bool, err error) error { return err }

// TestCallsSayWhetherThereIsWork checks the empty calls every backend
// answers without a round trip: no tasks, a size below one, an empty span,
// a cursor at the end, another owner's term; and that a call with
// something to do, or with an error, is not one of them.
func TestCallsSayWhetherThereIsWork(t *testing.T) {
	t.Parallel()
	task := []taskapi.Task{{Sequence: 1}}
	empty := taskapi.Range{From: 5, To: 4}
	term := taskapi.Term{Topic: "t", Owner: "o", Number: 1}
	run := func(run bool, _ error) bool { return run }
	poll := func(size int) bool { _, run, _ := check.Poll("o", "t", size, nil); return run }
	purge := func(span taskapi.Range) bool { _, run, _ := check.Purge("t", span, nil); return run }
	for name, c := range map[string]struct{ got, want bool }{
		"Push of none":                 {run(check.Push("t", taskapi.Append, nil)), false},
		"Push of one":                  {run(check.Push("t", taskapi.Append, []taskapi.Creation{{Identifier: "a"}})), true},
		"Push of one, bad topic":       {run(check.Push("", taskapi.Append, []taskapi.Creation{{Identifier: "a"}})), false},
		"Poll of 0":                    {poll(0), false},
		"Poll of 1":                    {poll(1), true},
		"Defer of none":                {run(check.Defer("t", time.Time{}, nil)), false},
		"Defer of one":                 {run(check.Defer("t", time.Time{}, task)), true},
		"Release of none":              {run(check.Release("t", nil)), false},
		"Release of one":               {run(check.Release("t", task)), true},
		"Complete of none":             {run(check.Completions("t", nil)), false},
		"Reassign of none":             {run(check.Assignments("t", nil)), false},
		"ReviveTasks of none":          {run(check.ReviveTasks("t", taskapi.ReviveReset, nil)), false},
		"Revive of an empty span":      {run(check.Revive("t", taskapi.ReviveReset, taskapi.Failed, empty, 5)), false},
		"Revive of size 0":             {run(check.Revive("t", taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 0)), false},
		"Revive":                       {run(check.Revive("t", taskapi.ReviveReset, taskapi.Failed, taskapi.Unbounded, 1)), true},
		"ReassignAll to the state":     {run(check.ReassignAll("t", taskapi.Failed, taskapi.Failure, taskapi.Unbounded)), false},
		"ReassignAll, empty span":      {run(check.ReassignAll("t", taskapi.Failed, taskapi.Success, empty)), false},
		"ReassignAll":                  {run(check.ReassignAll("t", taskapi.Failed, taskapi.Success, taskapi.Unbounded)), true},
		"Purge of an empty span":       {purge(empty), false},
		"Purge":                        {purge(taskapi.Unbounded), true},
		"Page of size 0":               {run(check.Page("t", taskapi.Listing{}, 1, 0, taskapi.Forward)), false},
		"Page forward from the end":    {run(check.Page("t", taskapi.Listing{}, taskapi.MaxSequence, 5, taskapi.Forward)), false},
		"Page backward from the start": {run(check.Page("t", taskapi.Listing{}, taskapi.Inception, 5, taskapi.Backward)), false},
		"Page below the start":         {run(check.Page("t", taskapi.Listing{}, taskapi.Inception-1, 5, taskapi.Forward)), false},
		"Page forward from the start":  {run(check.Page("t", taskapi.Listing{}, taskapi.Inception, 5, taskapi.Forward)), true},
		"Page backward from the end":   {run(check.Page("t", taskapi.Listing{}, taskapi.MaxSequence, 5, taskapi.Backward)), true},
		"PageAt of size 0":             {run(check.PageAt("t", taskapi.Listing{}, 0, taskapi.Forward)), false},
		"Find at the start":            {run(check.Find("t", taskapi.Search{Identifier: "a"}, taskapi.Inception, 5)), false},
		"Find":                         {run(check.Find("t", taskapi.Search{Identifier: "a"}, taskapi.MaxSequence, 5)), true},
		"AuditPage of 0":               {run(check.AuditPage(0, 0)), false},
		"AuditPage":                    {run(check.AuditPage(0, 1)), true},
		"Renew of another's term":      {run(check.Renew("p", term, time.Minute)), false},
		"Renew":                        {run(check.Renew("o", term, time.Minute)), true},
		"Concede of another's term":    {run(check.Concede("p", term)), false},
		"Concede":                      {run(check.Concede("o", term)), true},
	} {
		if c.got != c.want {
			t.Errorf("%s: run = %v, want %v", name, c.got, c.want)
		}
	}
	if states, _, _ := check.Purge("t", taskapi.Unbounded, nil); !slices.Equal(states, check.DefaultPurged) {
		t.Errorf("Purge without states purges %v, want %v", states, check.DefaultPurged)
	}
}
