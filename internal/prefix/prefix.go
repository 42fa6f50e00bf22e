// Package prefix turns a prefix into a LIKE pattern that matches the
// strings beginning with it, for taskapi.Finder on every backend.
package prefix

import "strings"

// Escape is the escape character of the patterns, given to LIKE as
// ESCAPE '!'. Not the backslash: MySQL reads a backslash inside a string
// literal as an escape of its own, so '\' would not parse there.
const Escape = "!"

// escaper escapes LIKE's wildcards and the escape character itself.
var escaper = strings.NewReplacer(Escape, Escape+Escape, "%", Escape+"%", "_", Escape+"_")

// Pattern returns the LIKE pattern (with ESCAPE '!') of the strings that
// begin with p, every character of p taken literally; "" for an empty p,
// which callers read as no filter.
func Pattern(p string) string {
	if p == "" {
		return ""
	}
	return escaper.Replace(p) + "%"
}
