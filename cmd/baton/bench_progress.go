package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// benchProgressEvery is how often the progress line is redrawn.
const benchProgressEvery = 200 * time.Millisecond

// startBenchProgress draws the run's progress on w, when w is a terminal
// (isTerminal): a bar over the duration and the operations so far. The
// returned stop erases the bar and waits for the goroutine that draws it.
func startBenchProgress(w io.Writer, d time.Duration, ops func() int64) (stop func()) {
	if !isTerminal(w) {
		return func() {}
	}
	bar := progressbar.NewOptions64(d.Milliseconds(),
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription("bench"),
	)
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(benchProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				bar.Describe(fmt.Sprintf("bench: %d operations", ops()))
				// A write error on a terminal leaves nothing to do.
				_ = bar.Set64(min(time.Since(start), d).Milliseconds())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		_ = bar.Finish()
	}
}
