package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// cdfSeries is one implementation's values for a CDF plot.
type cdfSeries struct {
	name   string
	values []float64
}

// errNoValues says a plot would have had no line to draw; an empty PNG
// would pass for a result in the write-up.
var errNoValues = errors.New("no series has a value to plot")

// errSpan says the values are too far apart for a linear axis: gonum's
// tick search never ends on a range of +Inf.
var errSpan = errors.New("values span more than a float64 can hold; a log axis can plot them")

const (
	// cdfWidth and cdfHeight fit a page of the write-up at 96 dpi
	// (672×432 px) with the legend beside the axes.
	cdfWidth  = 7 * vg.Inch
	cdfHeight = 4.5 * vg.Inch

	// cdfMaxPoints bounds the points drawn per line: a few thousand
	// already look continuous at this size, and millions of samples
	// would only make the PNG slow to draw.
	cdfMaxPoints = 2000
)

// writeCDFPlot writes to path a PNG of the empirical cumulative
// distribution of each series' values, one line per series. A CDF shows
// every quantile at once, where a table shows a few, so two
// implementations' tails can be compared at a glance. Each line has its
// own colour and dash pattern, so that the plot still reads when printed
// in grey, and the legend sits outside the axes, where it cannot hide a
// line whatever the shape of the curves.
//
// NaN and infinite values are dropped, and so are values <= 0 when logX
// is set, which a log axis cannot place. A series left with no values is
// left out; if none is left the error wraps errNoValues. Values too far
// apart for a linear axis give errSpan. The PNG is drawn in memory
// first, so a plot that fails leaves no file behind.
func writeCDFPlot(path, title, xLabel string, logX bool, series []cdfSeries) error {
	p, leg, err := cdfPlot(title, xLabel, logX, series)
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	var buf bytes.Buffer
	img := vgimg.PngCanvas{Canvas: drawWithLegend(p, leg)}
	if _, err := img.WriteTo(&buf); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// cdfPlot builds the plot and, apart from it, its legend, which
// drawWithLegend places beside the axes rather than on them.
func cdfPlot(title, xLabel string, logX bool, series []cdfSeries) (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "fraction at or below"
	p.Add(plotter.NewGrid())

	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	xMin, xMax := math.Inf(1), math.Inf(-1)
	drawn := 0
	for _, s := range series {
		sorted := plottable(s.values, logX)
		if len(sorted) == 0 {
			continue
		}
		line, err := plotter.NewLine(cdfPoints(sorted))
		if err != nil {
			return nil, leg, fmt.Errorf("%s: %w", s.name, err)
		}
		// PostStep draws the CDF as the step function it is: it holds
		// its value up to the next sample, then jumps.
		line.StepStyle = plotter.PostStep
		line.Color = plotutil.DarkColors[drawn%len(plotutil.DarkColors)]
		line.Dashes = plotutil.Dashes(drawn)
		line.Width = vg.Points(1.5)
		p.Add(line)
		leg.Add(s.name, line)
		xMin, xMax = min(xMin, sorted[0]), max(xMax, sorted[len(sorted)-1])
		drawn++
	}
	if drawn == 0 {
		return nil, leg, errNoValues
	}

	p.Y.Min, p.Y.Max = 0, 1
	if !logX && math.IsInf(xMax-xMin, 0) {
		return nil, leg, errSpan
	}
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
		// gonum widens a range of one value by ±1, which on a log axis
		// can reach zero or below and panic; widen it by a factor instead.
		if xMin == xMax {
			if lo := xMin / 2; lo > 0 {
				xMin = lo
			}
			if hi := xMax * 2; !math.IsInf(hi, 0) {
				xMax = hi
			}
		}
		p.X.Min, p.X.Max = xMin, xMax
	}
	return p, leg, nil
}

// plottable returns a sorted copy of values without those the axis
// cannot place; the caller's slice may be a result still used elsewhere,
// so it is not sorted in place.
func plottable(values []float64, logX bool) []float64 {
	kept := make([]float64, 0, len(values))
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (logX && v <= 0) {
			continue
		}
		kept = append(kept, v)
	}
	slices.Sort(kept)
	return kept
}

// cdfPoints turns sorted values into CDF points: the i-th smallest of n
// has the fraction (i+1)/n at or below it. Past cdfMaxPoints it keeps
// evenly spaced quantiles only, always the first and the last, so that
// the line still starts at the minimum and reaches 1 at the maximum.
func cdfPoints(sorted []float64) plotter.XYs {
	n := len(sorted)
	m := min(n, cdfMaxPoints)
	pts := make(plotter.XYs, m)
	for k := range pts {
		i := k
		if m < n {
			i = int(math.Round(float64(k) * float64(n-1) / float64(m-1)))
		}
		pts[k] = plotter.XY{X: sorted[i], Y: float64(i+1) / float64(n)}
	}
	return pts
}

// drawWithLegend draws p on a canvas of the write-up's size with leg in
// a column to the right of the axes, its top level with theirs.
func drawWithLegend(p *plot.Plot, leg plot.Legend) *vgimg.Canvas {
	img := vgimg.New(cdfWidth, cdfHeight)
	dc := draw.New(img)

	gap := vg.Points(10)
	r := leg.Rectangle(dc)
	// A very long name would otherwise squeeze the axes to nothing.
	legWidth := min(r.Max.X-r.Min.X+2*gap, cdfWidth/2)

	pc := draw.Crop(dc, 0, -legWidth, 0, 0)
	p.Draw(pc)

	data := p.DataCanvas(pc)
	leg.Draw(draw.Canvas{
		Canvas: dc.Canvas,
		Rectangle: vg.Rectangle{
			Min: vg.Point{X: pc.Max.X + gap, Y: data.Min.Y},
			Max: vg.Point{X: dc.Max.X - gap, Y: data.Max.Y},
		},
	})
	return img
}

// logTicks labels a log axis with short numbers ("100", "1000", "1e4",
// "0.001", "1e-5"), not LogTicks' "1e+02" or "10000000", and, where the
// range spans less than a decade and so holds fewer than two powers of
// ten, labels the minor ticks too, which would otherwise leave the axis
// unnumbered.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.LogTicks{}.Ticks(lo, hi)
	labelled := 0
	for _, t := range ticks {
		if t.Label != "" && lo <= t.Value && t.Value <= hi {
			labelled++
		}
	}
	for i, t := range ticks {
		if t.Label != "" || labelled < 2 {
			ticks[i].Label = tickLabel(t.Value)
		}
	}
	return ticks
}

// tickLabel rounds away the float noise of LogTicks' products (0.1×3
// is 0.30000000000000004), and writes exponents without the sign and
// padding of %g, which take room under a tick.
func tickLabel(v float64) string {
	s := strconv.FormatFloat(v, 'g', 4, 64)
	mant, exp, ok := strings.Cut(s, "e")
	if !ok {
		return s
	}
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(exp, "+-0")
	if neg {
		exp = "-" + exp
	}
	return mant + "e" + exp
}
