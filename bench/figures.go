package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/batonlock/baton/internal/latency"
)

// figures is what one implementation did in one round of a scenario
// other than the first: one number per column of the scenario's table,
// in the columns' order. Durations are in nanoseconds.
type figures []float64

// column is one figure of a scenario's table.
type column struct {
	name string
	// json is the figure's field in --json's rows, in microseconds where
	// nanos says the figure is a duration.
	json   string
	nanos  bool
	format func(float64) string
	// ratio adds a column with the median of the per-round ratios of this
	// figure to the baseline's.
	ratio bool
}

// asDuration formats nanoseconds as latency.Format does.
func asDuration(x float64) string { return latency.Format(time.Duration(x)) }

// asCount formats a rate or a count with no decimals.
func asCount(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }

// asFraction formats a figure with three decimals.
func asFraction(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

// asOne formats a figure with one decimal.
func asOne(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// columnMedians returns instance i's figure k: its median over rounds,
// and the median of its per-round ratios to the instance at base (0 when
// base is -1).
func columnMedians(samples [][]figures, i, k, base int) (figure, ratio float64) {
	var xs, rs []float64
	for _, round := range samples {
		xs = append(xs, round[i][k])
		if base >= 0 && round[base][k] != 0 {
			rs = append(rs, round[i][k]/round[base][k])
		}
	}
	return median(xs), median(rs)
}

// writeFiguresTable writes samples[round][instance] as a markdown table,
// a row per instance: each figure's median over rounds, then, for the
// columns that ask for one, the median of its per-round ratios to the
// instance at base (none when base is -1).
func writeFiguresTable(w io.Writer, names []string, cols []column, samples [][]figures, base int) error {
	head := []string{"implementation"}
	align := []string{"---"}
	for _, c := range cols {
		head, align = append(head, c.name), append(align, "---:")
	}
	for _, c := range cols {
		if c.ratio {
			head, align = append(head, c.name+" ÷ "+baseline), append(align, "---:")
		}
	}
	if _, err := fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(align, " | ")); err != nil {
		return err
	}
	for i, name := range names {
		cells := []string{name}
		var ratios []string
		for k, c := range cols {
			m, r := columnMedians(samples, i, k, base)
			cells = append(cells, c.format(m))
			if c.ratio {
				ratios = append(ratios, times(r))
			}
		}
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(append(cells, ratios...), " | ")); err != nil {
			return err
		}
	}
	return nil
}
