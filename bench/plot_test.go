package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// pngSignature is the first eight bytes of every PNG file.
var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// latencies returns n values spread over three decades, out of order,
// so that a plot of them is log-worthy and sorting them shows.
func latencies(n int, scale float64) []float64 {
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = scale * math.Pow(1000, float64((i*7919)%n)/float64(n))
	}
	return vs
}

func TestWriteCDFPlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logX   bool
		series []cdfSeries
	}{
		{name: "linear", series: []cdfSeries{
			{name: "baton", values: latencies(500, 1e4)},
			{name: "redsync", values: latencies(300, 3e4)},
		}},
		{name: "log", logX: true, series: []cdfSeries{
			{name: "baton", values: latencies(500, 1e4)},
			{name: "redsync", values: latencies(300, 3e4)},
		}},
		{name: "thinned", logX: true, series: []cdfSeries{
			{name: "baton", values: latencies(50_000, 1e4)},
			{name: "redsync", values: latencies(3, 3e4)},
		}},
		{name: "odd values dropped", logX: true, series: []cdfSeries{
			{name: "baton", values: []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -5, 1e5, 2e5}},
			{name: "empty"},
			{name: "redsync", values: []float64{3e5}},
		}},
		{name: "one value on log", logX: true, series: []cdfSeries{
			{name: "baton", values: []float64{1, 1, 1}},
		}},
		{name: "within a decade on log", logX: true, series: []cdfSeries{
			{name: "baton", values: []float64{200, 250, 300}},
		}},
		{name: "wide range", series: []cdfSeries{
			{name: "baton", values: []float64{-1e307, 1e308}},
		}},
		{name: "tiny and huge on log", logX: true, series: []cdfSeries{
			{name: "baton", values: []float64{math.SmallestNonzeroFloat64}},
			{name: "redsync", values: []float64{math.MaxFloat64}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cdf.png")
			require.NoError(t, writeCDFPlot(path, "Lock latency", "latency (ns)", tc.logX, tc.series))

			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.True(t, bytes.HasPrefix(b, pngSignature), "no PNG signature")
			img, err := png.Decode(bytes.NewReader(b))
			require.NoError(t, err)
			size := img.Bounds().Size()
			require.Greater(t, size.X, 400)
			require.Greater(t, size.X, size.Y, "a 7×4.5 in plot is wider than high")
		})
	}
}

func TestWriteCDFPlotRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logX   bool
		series []cdfSeries
		want   error
	}{
		{name: "no series", want: errNoValues},
		{name: "all empty", want: errNoValues, series: []cdfSeries{
			{name: "baton"},
			{name: "redsync", values: []float64{}},
		}},
		{name: "only NaN and Inf", want: errNoValues, series: []cdfSeries{
			{name: "baton", values: []float64{math.NaN(), math.Inf(1), math.Inf(-1)}},
		}},
		{name: "non-positive on log", logX: true, want: errNoValues, series: []cdfSeries{
			{name: "baton", values: []float64{0, -1}},
			{name: "redsync", values: []float64{-1e9}},
		}},
		{name: "span overflows a linear axis", want: errSpan, series: []cdfSeries{
			{name: "baton", values: []float64{-math.MaxFloat64}},
			{name: "redsync", values: []float64{math.MaxFloat64}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cdf.png")
			err := writeCDFPlot(path, "Lock latency", "latency (ns)", tc.logX, tc.series)
			require.ErrorIs(t, err, tc.want)
			require.NoFileExists(t, path)
		})
	}
}

func TestWriteCDFPlotLeavesValuesInOrder(t *testing.T) {
	values := []float64{3, 1, math.NaN(), 2, -1, 5}
	before := slices.Clone(values)
	path := filepath.Join(t.TempDir(), "cdf.png")
	require.NoError(t, writeCDFPlot(path, "t", "x", true, []cdfSeries{{name: "a", values: values}}))
	// NaN != NaN, so compare the bit patterns.
	require.Equal(t, bits(before), bits(values))
}

func bits(vs []float64) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = math.Float64bits(v)
	}
	return out
}

func TestCDFPoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want int
	}{
		{name: "small kept whole", n: 5, want: 5},
		{name: "at the bound", n: cdfMaxPoints, want: cdfMaxPoints},
		{name: "large thinned", n: 100_003, want: cdfMaxPoints},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := make([]float64, tc.n)
			for i := range sorted {
				sorted[i] = float64(i)
			}
			pts := cdfPoints(sorted)
			require.Len(t, pts, tc.want)
			require.Equal(t, sorted[0], pts[0].X)
			require.Equal(t, 1/float64(tc.n), pts[0].Y)
			require.Equal(t, sorted[tc.n-1], pts[len(pts)-1].X)
			require.Equal(t, 1.0, pts[len(pts)-1].Y)
			for i := 1; i < len(pts); i++ {
				require.Less(t, pts[i-1].X, pts[i].X)
				require.Less(t, pts[i-1].Y, pts[i].Y)
			}
		})
	}
}

func TestTickLabel(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{100, "100"},
		{1000, "1000"},
		{1e4, "1e4"},
		{0.1 * 3, "0.3"},
		{0.001, "0.001"},
		{1e-5, "1e-5"},
		{2.5e12, "2.5e12"},
	} {
		require.Equal(t, tc.want, tickLabel(tc.v), "%v", tc.v)
	}
}
