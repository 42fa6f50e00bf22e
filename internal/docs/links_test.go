package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Markdown the repository links within: its own pages.
var markdownPages = []string{"../../README.md", "../../CHANGELOG.md", "../../CONTRIBUTING.md", "../../docs/*.md", "../../examples/*/*.md"}

var (
	// mdLink finds the target of a Markdown link or image: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codeSpan finds inline code, whose text is not a link.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// heading finds a heading's text.
	heading = regexp.MustCompile(`^#{1,6} (.+?)\s*#*$`)
	// notInSlug is what GitHub leaves out of a heading's anchor.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// TestLinksResolve checks every link of the repository's Markdown pages
// that stays in the repository: the file or directory it names exists,
// and its anchor, if any, is a heading of that page (GitHub's anchors:
// lower case, punctuation left out, spaces as hyphens, -1, -2… for
// repeats). Links to the web are not followed.
func TestLinksResolve(t *testing.T) {
	var pages []string
	for _, pattern := range markdownPages {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, found...)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) map[string]bool {
		if a, ok := anchorsOf[page]; ok {
			return a
		}
		a := headingAnchors(t, page)
		anchorsOf[page] = a
		return a
	}
	links := 0
	for _, page := range pages {
		for _, l := range pageLinks(t, page) {
			target, anchor, _ := strings.Cut(l.target, "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), target)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: the link to %s names nothing in the repository", page, l.line, l.target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(file)[anchor] {
				t.Errorf("%s:%d: the link to %s: %s has no heading with the anchor #%s", page, l.line, l.target, file, anchor)
			}
		}
	}
	if links == 0 {
		t.Fatal("no link found in the repository's pages")
	}
	t.Logf("%d links within the repository checked in %d pages", links, len(pages))
}

// link is a link's target and the line it is on.
type link struct {
	target string
	line   int
}

// pageLinks returns the links of page outside code blocks and code spans.
func pageLinks(t *testing.T, page string) []link {
	t.Helper()
	var out []link
	forText(t, page, func(n int, line string) {
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{target: m[1], line: n})
		}
	})
	return out
}

// headingAnchors returns the anchors of the headings of page.
func headingAnchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	anchors, seen := map[string]bool{}, map[string]int{}
	forText(t, page, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := strings.ReplaceAll(notInSlug.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// forText calls fn with each line of page outside its code blocks, and
// its number.
func forText(t *testing.T, page string, fn func(n int, line string)) {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	code := false
	for i, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			code = !code
			continue
		}
		if !code {
			fn(i+1, line)
		}
	}
}
