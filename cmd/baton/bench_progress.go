package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// benchProgressEvery is how often the progress line is redrawn.
const benchProgressEvery = 200 * time.Millisecond

// startBenchProgress draws the run's progress on w, when w is a terminal:
// a bar over the duration and the operations so far. A file or a pipe
// gets nothing, so that a log holds no redraws. The returned stop erases
// the bar and waits for the goroutine that draws it.
func startBenchProgress(w io.Writer, d time.Duration, ops func() int64) (stop func()) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
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
