package web

import (
	"fmt"
	"html/template"
	"strings"
	"unicode"
)

// Names (topics, identifiers, references, owners) may hold characters that
// do not show, or that reorder the text around them: a right-to-left
// override makes "invoice\u202efdp.exe" read as "invoiceexe.pdf", a
// zero-width space makes two names that read alike differ. html/template
// escapes them as text already; the pages also isolate every name that
// holds any in a bdi element, so that its controls reorder nothing outside
// it, and put a visible mark after it whose title names each hidden
// character. Other names are written as they were.

// hiddenNames names the hidden characters met most, for the mark's title.
var hiddenNames = map[rune]string{
	0x09: "tab", 0x0a: "line feed", 0x0d: "carriage return", 0x1b: "escape", 0x7f: "delete",
	0xad: "soft hyphen", 0x61c: "Arabic letter mark", 0x180e: "Mongolian vowel separator",
	0x200b: "zero-width space", 0x200c: "zero-width non-joiner", 0x200d: "zero-width joiner",
	0x200e: "left-to-right mark", 0x200f: "right-to-left mark",
	0x202a: "left-to-right embedding", 0x202b: "right-to-left embedding", 0x202c: "pop directional formatting",
	0x202d: "left-to-right override", 0x202e: "right-to-left override",
	0x2060: "word joiner", 0x2066: "left-to-right isolate", 0x2067: "right-to-left isolate",
	0x2068: "first strong isolate", 0x2069: "pop directional isolate", 0xfeff: "zero-width no-break space",
	0x115f: "Hangul choseong filler", 0x1160: "Hangul jungseong filler", 0x3164: "Hangul filler", 0xffa0: "halfwidth Hangul filler",
}

// hiddenRune says whether r does not show or reorders text: a control
// character, a format character (the bidirectional controls, the
// zero-width ones, the tags), or a filler that shows as nothing.
func hiddenRune(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == 0x115f || r == 0x1160 || r == 0x3164 || r == 0xffa0
}

// bidiRune says whether r is a bidirectional control.
func bidiRune(r rune) bool {
	return r == 0x61c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// hiddenIn returns the distinct hidden characters of s, in order.
func hiddenIn(s string) []rune {
	var found []rune
	for _, r := range s {
		if hiddenRune(r) && !strings.ContainsRune(string(found), r) {
			found = append(found, r)
		}
	}
	return found
}

// isolated writes s escaped, in a bdi element when it holds hidden
// characters: its bidirectional controls then reorder nothing outside it.
func isolated(s string) template.HTML {
	if len(hiddenIn(s)) == 0 {
		return template.HTML(template.HTMLEscapeString(s))
	}
	return template.HTML("<bdi>" + template.HTMLEscapeString(s) + "</bdi>")
}

// hiddenMark writes the mark of the hidden characters of s, or nothing
// when it holds none: "⚠ bidi" for bidirectional controls, "⚠ hidden"
// otherwise, titled with each character's code point and name.
func hiddenMark(s string) template.HTML {
	found := hiddenIn(s)
	if len(found) == 0 {
		return ""
	}
	label, names := "⚠ hidden", make([]string, len(found))
	for i, r := range found {
		if bidiRune(r) {
			label = "⚠ bidi"
		}
		names[i] = fmt.Sprintf("U+%04X", r)
		if n, ok := hiddenNames[r]; ok {
			names[i] += " " + n
		}
	}
	title := "This name holds characters that do not show or that reorder the text around them: " +
		strings.Join(names, ", ") + ". It may not be what it reads as."
	return template.HTML(`<span class="hidden-chars" title="` + template.HTMLEscapeString(title) + `">` + label + `</span>`)
}

// named writes s isolated, and its mark, when it holds hidden characters;
// escaped as it is otherwise.
func named(s string) template.HTML { return isolated(s) + hiddenMark(s) }
