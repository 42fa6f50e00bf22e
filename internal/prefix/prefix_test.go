package prefix

import "testing"

func TestPattern(t *testing.T) {
	for p, want := range map[string]string{
		"":        "",
		"abc":     "abc%",
		"50%_off": "50!%!_off%",
		"a!b":     "a!!b%",
		`a\b`:     `a\b%`,
	} {
		if got := Pattern(p); got != want {
			t.Errorf("Pattern(%q) = %q, want %q", p, got, want)
		}
	}
}
