package web

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The dashboard's pages and actions are tested against real databases in
// package main (serve_test.go, browser_test.go), where taskctl's store is;
// these are the pure parts.

func TestLocalPathKeepsTheBrowserHere(t *testing.T) {
	for in, want := range map[string]string{
		"/topic?topic=a": "/topic?topic=a", "/": "/", "": "/", "//evil.example/x": "/", `/\evil.example`: "/",
		"https://evil.example/": "/", "javascript:alert(1)": "/", "/owners\r\nSet-Cookie: x": "/",
		"/\t/evil.example/": "/", "/ /evil.example": "/", "/%2F%2Fevil.example": "/", "/%5Cevil": "/", "/%09/evil": "/",
		"/a\\b": "/", "/\x00": "/", "/topic?topic=%2F%2Fx&state=FAILED": "/topic?topic=%2F%2Fx&state=FAILED",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNumbersAndDurations(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := num(n); got != want {
			t.Errorf("num(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond: "850ms", 4200 * time.Millisecond: "4.2s", 185 * time.Second: "3m05s",
		130 * time.Minute: "2h10m", 76 * time.Hour: "3d4h",
	} {
		if got := dur(d); got != want {
			t.Errorf("dur(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestChartsEscapeTheirText(t *testing.T) {
	now := time.Now()
	title := `in "<script>alert(1)</script>" & more`
	for _, svg := range []string{
		string(barChart(title, map[int64]int64{now.Unix() / 60: 7}, now)),
		string(lineChart(title, []sample{{now.Add(-time.Minute), 1}, {now, 3}}, now, countLabel, past{})),
	} {
		if strings.Contains(svg, "<script>") || !strings.Contains(svg, "&lt;script&gt;") {
			t.Errorf("a chart does not escape its title:\n%s", svg)
		}
		if strings.Contains(svg, "style=") {
			t.Errorf("a chart has an inline style, which the CSP refuses:\n%s", svg)
		}
	}
}

func TestTopicsByName(t *testing.T) {
	want := []string{"", "a01", "a1", "a1b", "a01c", "alpha", "Beta", "orders-2", "Orders-10", "orders-10", "orders-10b", "zeta", "é"}
	got := slices.Clone(want)
	slices.Reverse(got)
	slices.SortFunc(got, byName)
	if !slices.Equal(got, want) {
		t.Errorf("sorted by name: %q, want %q", got, want)
	}
}

func TestHiddenCharactersAreMarked(t *testing.T) {
	for s, want := range map[string]string{
		"plain-order": "", "שלום-42": "", "日本語のタスク": "", "é": "",
		"invoice\u202efdp.exe": "⚠ bidi", "a\u200bb": "⚠ hidden", "tab\there": "⚠ hidden", "\x1b[31mred": "⚠ hidden",
		"a\u2066b\u2069\u200b": "⚠ bidi", "tag\U000E0041": "⚠ hidden",
	} {
		mark := string(hiddenMark(s))
		if want == "" && mark != "" || !strings.Contains(mark, want) {
			t.Errorf("hiddenMark(%q) = %q, want %q", s, mark, want)
		}
		if iso := string(isolated(s)); (want != "") != strings.HasPrefix(iso, "<bdi>") {
			t.Errorf("isolated(%q) = %q", s, iso)
		}
	}
	if got := string(named(`<b>x</b>` + "\u202e")); !strings.Contains(got, "&lt;b&gt;") || strings.Contains(got, "<b>") {
		t.Errorf("named does not escape: %q", got)
	}
}

func TestAuditParametersAreCompact(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{"1", "2", "3", "5", "7", "8"}, "1–3, 5, 7–8"},
		{[]string{"FAILED", "FAILED", "FAILED", "READY"}, "FAILED ×3, READY"},
		{[]string{"9", "9", "10"}, "9 ×2, 10"},
		{[]string{"a", "1", "2", "b"}, "a, 1–2, b"},
		{[]string{"-2", "-1", "0"}, "-2–0"},
	} {
		if got := compact(c.values); got != c.want {
			t.Errorf("compact(%q) = %q, want %q", c.values, got, c.want)
		}
	}
	params := auditParamsOf(`{"topic":"orders","seq":["1","2","3","4"],"was":["FAILED","FAILED","FAILED","FAILED"]}`)
	var shown []string
	for _, p := range params {
		shown = append(shown, p.Name+"="+p.Value)
	}
	if want := []string{"seq=1–4", "topic=orders", "was=FAILED ×4"}; !slices.Equal(shown, want) {
		t.Errorf("the parameters of an action on four tasks are shown as %q, want %q", shown, want)
	}
}
