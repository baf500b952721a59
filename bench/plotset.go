package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// plotSet gathers one server's distributions as its scenarios end and
// writes them as PNG files once they are all done.
type plotSet struct {
	dir    string // where the files go; empty for no plots
	slug   string // the server's part of the file names
	server string // the server's part of the titles
	plots  []pendingPlot
}

// pendingPlot is one plot's data, waiting to be written.
type pendingPlot struct {
	file, title, xLabel string
	logX                bool
	series              []cdfSeries
}

func (p *plotSet) add(file, title, xLabel string, logX bool, series []cdfSeries) {
	if p.dir == "" {
		return
	}
	p.plots = append(p.plots, pendingPlot{
		file: p.slug + "-" + file + ".png", title: title + " (" + p.server + ")",
		xLabel: xLabel, logX: logX, series: series,
	})
}

// uncontended adds one of scenario 1's tables' latencies, every
// operation of every round, as file with title.
func (p *plotSet) uncontended(file, title string, names []string, samples [][]sample) {
	series := make([]cdfSeries, len(names))
	for i, name := range names {
		series[i].name = name
		for _, round := range samples {
			series[i].values = append(series[i].values, round[i].all.Values()...)
		}
	}
	p.add(file, title, "latency (µs)", true, series)
}

// handoffWaits adds scenario 3's Lock waits.
func (p *plotSet) handoffWaits(names []string, res handoffResult) {
	series := make([]cdfSeries, len(names))
	for i, name := range names {
		series[i] = cdfSeries{name: name, values: res.waits[i].Values()}
	}
	p.add("handoff-waits", fmt.Sprintf("Lock waits, %d lockers on one key", handoffLockers), "wait (µs)", true, series)
}

// waiter adds scenario 4's passed-over counts and waits.
func (p *plotSet) waiter(names []string, trials [][]waiterTrial) {
	passed := make([]cdfSeries, len(names))
	waits := make([]cdfSeries, len(names))
	for i, name := range names {
		passed[i].name, waits[i].name = name, name
		for _, t := range trials {
			if t[i].stalled {
				continue // counted apart in the table
			}
			// One more, so that never passed over has a place on the
			// log scale that separates 0, 1 and 2 from hundreds.
			passed[i].values = append(passed[i].values, float64(t[i].passed+1))
			waits[i].values = append(waits[i].values, float64(t[i].wait)/float64(time.Microsecond))
		}
	}
	p.add("passed-over", "Times the remote waiter was passed over", "1 + times passed over", true, passed)
	p.add("waiter-wait", "The remote waiter's wait", "wait (µs)", true, waits)
}

// write writes every plot added, creating the directory where needed.
func (p *plotSet) write() error {
	if p.dir == "" || len(p.plots) == 0 {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	var errs []error
	for _, pl := range p.plots {
		errs = append(errs, writeCDFPlot(filepath.Join(p.dir, pl.file), pl.title, pl.xLabel, pl.logX, pl.series))
	}
	return errors.Join(errs...)
}
