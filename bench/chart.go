package main

import (
	"image/color"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the sides: River with its default fetch settings is a paler
// River.
var (
	taskrepoColor      = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	riverColor         = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	riverDefaultsColor = color.RGBA{R: 0xff, G: 0xc8, B: 0x8a, A: 0xff}
)

// Sizes of the chart.
const (
	chartWidth = 10 * vg.Inch
	barWidth   = 8.0           // points
	panelFrame = 1.1 * vg.Inch // title, axis and padding of a panel
	minPanel   = 2.2 * vg.Inch // height of a panel with few bars
	chartPad   = 4 * vg.Millimeter
)

// drawChart draws bar charts one above the other into one PNG: pushes,
// burn-downs and continuous work in thousands of tasks per second, and the
// p99 latencies of the continuous runs, flat out and paced apart (they
// differ a hundredfold). River with its default fetch settings has bars of
// its own where it was measured.
func drawChart(path string, r *Report) error {
	rate := func(f Figure) bool { return f.Unit == "tasks/s" && f.Taskrepo != nil }
	push := func(f Figure) bool { return slices.Contains([]string{"bulk", "replace", "single", "single-tx"}, f.Key) }
	continuous := func(f Figure) bool { return strings.HasPrefix(f.Key, "continuous_") }
	completed := func(f Figure) bool { return continuous(f) && !strings.Contains(f.Key, "_backlog") }
	p99 := func(run string) func(Figure) bool {
		return func(f Figure) bool {
			return f.Unit == "ms" && strings.HasPrefix(f.Key, "continuous_"+run+"_") && strings.HasSuffix(f.Key, "_p99")
		}
	}
	var (
		plots   []*plot.Plot
		heights []vg.Length
	)
	for _, panel := range []struct {
		title string
		data  series
	}{
		{"pushes, thousand tasks/s (higher is better)", pick(r, func(f Figure) bool { return rate(f) && push(f) }, 1e-3)},
		{"burn-downs, thousand tasks/s (higher is better)", pick(r, func(f Figure) bool { return rate(f) && !push(f) && !continuous(f) }, 1e-3)},
		{"continuous, completed, thousand tasks/s (higher is better)", pick(r, func(f Figure) bool { return rate(f) && completed(f) }, 1e-3)},
		{"continuous, flat out: p99 latency in ms (lower is better)", pick(r, p99("flat"), 1)},
		{"continuous, paced: p99 latency in ms (lower is better)", pick(r, p99("paced"), 1)},
	} {
		if len(panel.data.labels) == 0 {
			continue
		}
		p, err := barChart(panel.title, panel.data)
		if err != nil {
			return err
		}
		plots = append(plots, p)
		bars := vg.Points(barWidth * float64(len(panel.data.labels)*len(panel.data.sides())) * 1.3)
		heights = append(heights, max(minPanel, panelFrame+bars))
	}
	if len(plots) == 0 {
		return nil
	}
	return writePNG(path, plots, heights)
}

// writePNG draws plots one above the other, each as high as heights says,
// with their data areas aligned on the left, and writes them as PNG.
func writePNG(path string, plots []*plot.Plot, heights []vg.Length) error {
	total := 2 * chartPad
	for _, h := range heights {
		total += h + chartPad
	}
	img := vgimg.New(chartWidth, total)
	dc := draw.Crop(draw.New(img), chartPad, -chartPad, chartPad, -chartPad)
	// The widest space left of a data area, so that all start there.
	var left vg.Length
	for _, p := range plots {
		left = max(left, p.DataCanvas(dc).Min.X-dc.Min.X)
	}
	top := dc.Max.Y
	for i, p := range plots {
		c := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dc.Min.X, Y: top - heights[i]}, Max: vg.Point{X: dc.Max.X, Y: top}}}
		p.Draw(draw.Crop(c, left-(p.DataCanvas(c).Min.X-c.Min.X), 0, 0, 0))
		top -= heights[i] + chartPad
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}

// series is the data of one bar chart: a label and a value per side for
// each figure.
type series struct {
	labels                        []string
	taskrepo, river, riverDefault plotter.Values
}

// side is one side's bars in a chart.
type side struct {
	name   string
	values plotter.Values
	color  color.Color
}

// sides returns the sides of s that have bars: River with its defaults only
// where it was measured.
func (s series) sides() []side {
	sides := []side{{"taskrepo", s.taskrepo, taskrepoColor}, {"River", s.river, riverColor}}
	if slices.ContainsFunc(s.riverDefault, func(v float64) bool { return v > 0 }) {
		sides = append(sides, side{"River defaults", s.riverDefault, riverDefaultsColor})
	}
	return sides
}

// pick gathers the figures that keep holds, scaled by scale; a missing
// value is drawn as no bar.
func pick(r *Report, keep func(Figure) bool, scale float64) series {
	var s series
	for _, f := range r.Figures {
		if !keep(f) {
			continue
		}
		s.labels = append(s.labels, f.Name)
		s.taskrepo = append(s.taskrepo, orZero(f.Taskrepo)*scale)
		s.river = append(s.river, orZero(f.River)*scale)
		s.riverDefault = append(s.riverDefault, orZero(f.RiverDefaults)*scale)
	}
	return s
}

func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// barChart draws horizontal bars, one per side, taskrepo on top, for each
// label, of at least one label. The first label is drawn at the top.
func barChart(title string, s series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Legend.Top = true
	n := len(s.labels)
	reversed := func(v plotter.Values) plotter.Values {
		out := make(plotter.Values, n)
		for i := range v {
			out[n-1-i] = v[i]
		}
		return out
	}
	labels := make([]string, n)
	for i, l := range s.labels {
		labels[n-1-i] = l
	}
	sides := s.sides()
	highest := 1e-9
	for i, side := range sides {
		bars, err := plotter.NewBarChart(reversed(side.values), vg.Points(barWidth))
		if err != nil {
			return nil, err
		}
		bars.Horizontal = true
		bars.Color = side.color
		bars.LineStyle.Width = 0
		bars.Offset = vg.Points((float64(len(sides)-1)/2 - float64(i)) * barWidth)
		p.Add(bars)
		p.Legend.Add(side.name, bars)
		highest = max(highest, slices.Max(side.values))
	}
	p.NominalY(labels...)
	// Room above the top bars, and on the right for the legend above the
	// longest bar.
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = 0, roundUp(1.4*highest)
	p.Add(plotter.NewGrid())
	return p, nil
}

// roundUp rounds v > 0 up to a round multiple of a power of ten, so that
// the axis ends on a round number and gets round ticks.
func roundUp(v float64) float64 {
	power := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 7, 8, 10} {
		if m*power >= v {
			return m * power
		}
	}
	return 10 * power
}
