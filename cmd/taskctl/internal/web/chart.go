package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"
)

// The charts are SVG drawn on the server: presentation attributes and CSS
// classes only (no inline style or script, which the CSP forbids), every
// text escaped. They span the window before now.
const (
	chartWidth, chartHeight = 600, 150
	padLeft, padRight       = 64, 8
	padTop, padBottom       = 20, 22
	plotWidth               = chartWidth - padLeft - padRight
	plotHeight              = chartHeight - padTop - padBottom
)

// sample is one value of a chart at a time.
type sample struct {
	at time.Time
	v  float64
}

// chart is a chart being drawn.
type chart struct {
	b          strings.Builder
	start, end time.Time
	top        float64 // the value at the top of the plot
}

// newChart starts a chart titled title over [end-window, end] whose values
// reach at most top, with the axes and their labels; label writes a value.
func newChart(title string, end time.Time, top float64, label func(float64) string) *chart {
	c := &chart{start: end.Add(-window), end: end, top: max(top, 1)}
	fmt.Fprintf(&c.b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartWidth, chartHeight, template.HTMLEscapeString(title))
	fmt.Fprintf(&c.b, `<title>%s</title>`, template.HTMLEscapeString(title))
	fmt.Fprintf(&c.b, `<text class="chart-title" x="%d" y="13">%s</text>`, padLeft, template.HTMLEscapeString(title))
	fmt.Fprintf(&c.b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padLeft, padTop+plotHeight, padLeft+plotWidth, padTop+plotHeight)
	fmt.Fprintf(&c.b, `<line class="grid" x1="%d" y1="%d" x2="%d" y2="%d"/>`, padLeft, padTop, padLeft+plotWidth, padTop)
	fmt.Fprintf(&c.b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, padLeft-4, padTop+4, template.HTMLEscapeString(label(c.top)))
	fmt.Fprintf(&c.b, `<text class="tick" x="%d" y="%d" text-anchor="end">0</text>`, padLeft-4, padTop+plotHeight)
	for _, tick := range []struct {
		at     float64
		text   string
		anchor string
	}{{0, "-60m", "start"}, {0.5, "-30m", "middle"}, {1, "now", "end"}} {
		fmt.Fprintf(&c.b, `<text class="tick" x="%.1f" y="%d" text-anchor="%s">%s</text>`,
			padLeft+tick.at*plotWidth, chartHeight-6, tick.anchor, tick.text)
	}
	return c
}

// x is the horizontal place of t.
func (c *chart) x(t time.Time) float64 {
	f := float64(t.Sub(c.start)) / float64(c.end.Sub(c.start))
	return padLeft + min(max(f, 0), 1)*plotWidth
}

// y is the vertical place of v.
func (c *chart) y(v float64) float64 {
	return padTop + plotHeight - min(max(v/c.top, 0), 1)*plotHeight
}

// html ends the chart.
func (c *chart) html() template.HTML {
	c.b.WriteString(`</svg>`)
	return template.HTML(c.b.String()) // every text in it was escaped
}

// barChart draws one bar per minute of the window: counts by Unix minute.
func barChart(title string, counts map[int64]int64, end time.Time) template.HTML {
	var top int64
	for _, n := range counts {
		top = max(top, n)
	}
	c := newChart(title, end, float64(top), countLabel)
	barWidth := float64(plotWidth) / window.Minutes()
	first := end.Add(-window).Unix() / 60
	for m := first; m <= end.Unix()/60; m++ {
		n := counts[m]
		if n == 0 {
			continue
		}
		x := c.x(time.Unix(m*60, 0))
		y := c.y(float64(n))
		fmt.Fprintf(&c.b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
			x, y, max(barWidth-1, 1), padTop+plotHeight-y, time.Unix(m*60, 0).UTC().Format("15:04 UTC"), num(n))
	}
	return c.html()
}

// past is what a line chart knows of the time before the dashboard's
// first reading, which it marks when it lies within the window.
type past struct {
	began   time.Time // the first reading
	derived []sample  // values derived for the time before began, drawn dashed; none when nothing can be
	note    string    // what the derived values are, or why there are none
}

// lineChart draws samples as a line, and what it knows of the time before
// the first reading (p); label writes a value.
func lineChart(title string, samples []sample, end time.Time, label func(float64) string, p past) template.HTML {
	var top float64
	for _, s := range append(samples, p.derived...) {
		top = max(top, s.v)
	}
	c := newChart(title, end, top, label)
	if !p.began.IsZero() && p.began.After(c.start) {
		x := c.x(p.began)
		fmt.Fprintf(&c.b, `<line class="began" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>%s</title></line>`,
			x, padTop, x, padTop+plotHeight, template.HTMLEscapeString(p.note))
		if len(p.derived) > 0 {
			c.polyline("line derived", p.derived, p.note)
		}
	}
	if len(samples) > 0 {
		c.polyline("line", samples, "")
		last := samples[len(samples)-1]
		fmt.Fprintf(&c.b, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`,
			c.x(last.at), c.y(last.v), template.HTMLEscapeString(label(last.v)))
	}
	return c.html()
}

// polyline draws samples as a line of class, titled title when given.
func (c *chart) polyline(class string, samples []sample, title string) {
	fmt.Fprintf(&c.b, `<polyline class="%s" fill="none" points="`, class)
	for _, s := range samples {
		fmt.Fprintf(&c.b, "%.1f,%.1f ", c.x(s.at), c.y(s.v))
	}
	c.b.WriteString(`">`)
	if title != "" {
		fmt.Fprintf(&c.b, `<title>%s</title>`, template.HTMLEscapeString(title))
	}
	c.b.WriteString(`</polyline>`)
}

// durationLabel writes a value in nanoseconds as a duration.
func durationLabel(v float64) string { return dur(time.Duration(v)) }

// countLabel writes a value as a whole number.
func countLabel(v float64) string { return num(int64(v)) }
