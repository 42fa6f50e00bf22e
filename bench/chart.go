package main

import (
	"image/color"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the two sides.
var (
	taskrepoColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	riverColor    = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// drawChart draws four bar charts into one PNG: pushes and work in
// thousands of tasks per second, and the p99 latencies of the continuous
// runs, flat out and paced apart (they differ a hundredfold).
func drawChart(path string, r *Report) error {
	rate := func(f Figure) bool { return f.Unit == "tasks/s" && f.Taskrepo != nil }
	push := func(f Figure) bool { return slices.Contains([]string{"bulk", "replace", "single", "single-tx"}, f.Key) }
	p99 := func(run string) func(Figure) bool {
		return func(f Figure) bool {
			return f.Unit == "ms" && strings.HasPrefix(f.Key, "continuous_"+run+"_") && strings.HasSuffix(f.Key, "_p99")
		}
	}
	var panels [][]*plot.Plot
	for _, panel := range []struct {
		title string
		data  series
	}{
		{"pushes, thousand tasks/s (higher is better)", pick(r, func(f Figure) bool { return rate(f) && push(f) }, 1e-3)},
		{"work, thousand tasks/s (higher is better)", pick(r, func(f Figure) bool { return rate(f) && !push(f) }, 1e-3)},
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
		panels = append(panels, []*plot.Plot{p})
	}
	if len(panels) == 0 {
		return nil
	}
	width, height := 10*vg.Inch, vg.Length(len(panels))*3*vg.Inch
	img := vgimg.New(width, height)
	pad := 4 * vg.Millimeter
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(panels, tiles, draw.New(img))
	for i, row := range panels {
		row[0].Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// series is the data of one bar chart: a label and two values per figure.
type series struct {
	labels          []string
	taskrepo, river plotter.Values
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
	}
	return s
}

func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// barChart draws horizontal bars, taskrepo above River for each label, of at
// least one label. The first label is drawn at the top.
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
	const barWidth = 9.0
	for i, side := range []struct {
		name   string
		values plotter.Values
		color  color.Color
	}{{"taskrepo", s.taskrepo, taskrepoColor}, {"River", s.river, riverColor}} {
		bars, err := plotter.NewBarChart(reversed(side.values), vg.Points(barWidth))
		if err != nil {
			return nil, err
		}
		bars.Horizontal = true
		bars.Color = side.color
		bars.LineStyle.Width = 0
		bars.Offset = vg.Points(barWidth/2 - float64(i)*barWidth)
		p.Add(bars)
		p.Legend.Add(side.name, bars)
	}
	p.NominalY(labels...)
	// Room on the right for the legend above the longest bar.
	p.X.Min, p.X.Max = 0, 1.3*max(slices.Max(s.taskrepo), slices.Max(s.river), 1e-9)
	p.Add(plotter.NewGrid())
	return p, nil
}
