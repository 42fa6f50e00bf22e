package web

import (
	"cmp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// byName orders topic names as a person reads them: letters case aside,
// and runs of digits by their value, so that orders-2 comes before
// orders-10 and alpha before Beta; names equal that way go by their bytes.
// Topics come from the repository in byte order, in which Beta comes
// before alpha and orders-10 before orders-2.
func byName(a, b string) int {
	x, y := a, b
	for x != "" && y != "" {
		var c int
		if isDigit(x[0]) && isDigit(y[0]) {
			var dx, dy string
			dx, x = digits(x)
			dy, y = digits(y)
			c = cmp.Or(cmp.Compare(len(dx), len(dy)), strings.Compare(dx, dy))
		} else {
			rx, nx := utf8.DecodeRuneInString(x)
			ry, ny := utf8.DecodeRuneInString(y)
			x, y = x[nx:], y[ny:]
			c = cmp.Compare(unicode.ToLower(rx), unicode.ToLower(ry))
		}
		if c != 0 {
			return c
		}
	}
	// One is the other read on: the shorter first.
	return cmp.Or(cmp.Compare(len(x), len(y)), strings.Compare(a, b))
}

// isDigit says whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits splits s after its leading digits, leading zeros dropped from
// the number (its value decides).
func digits(s string) (number, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	number = strings.TrimLeft(s[:i], "0")
	return number, s[i:]
}
