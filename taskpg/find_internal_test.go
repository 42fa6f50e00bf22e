package taskpg

import "testing"

func TestPrefixRange(t *testing.T) {
	for _, c := range []struct {
		p        string
		ordered  bool
		from, to string // "-": nil
	}{
		{"", true, "-", "-"},
		{"abc", false, "-", "-"},
		{"abc", true, "abc", "abd"},
		{"a-", true, "a-", "a."},
		{"z\U0010FFFF", true, "z\U0010FFFF", "{"},
		{"\U0010FFFF", true, "\U0010FFFF", "-"},
		{"a\uD7FF", true, "a\uD7FF", "a\uE000"},
	} {
		from, to := prefixRange(c.p, c.ordered)
		if show(from) != c.from || show(to) != c.to {
			t.Errorf("prefixRange(%q, %v) = %q, %q; want %q, %q", c.p, c.ordered, show(from), show(to), c.from, c.to)
		}
	}
}

func show(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
