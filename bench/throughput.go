package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// throughputWorkers is scenario 2's number of goroutines, each on a key
// of its own.
const throughputWorkers = 64

// throughputColumns are scenario 2's figures.
var throughputColumns = []column{
	{name: "ops/s", json: "ops_per_s", format: asCount, ratio: true},
	{name: "stalled", json: "stalled", format: asCount},
}

// stallGrace is how long after a throughput round's end a Lock may still
// wait before its worker counts as stalled.
const stallGrace = 2 * time.Second

// runThroughput is scenario 2: throughputWorkers goroutines, each doing
// Lock+Unlock back to back on a key of its own, through one instance per
// implementation, for d per implementation per round. The floor, which
// is one connection and no client, gets a bare connection per goroutine.
// Rounds are interleaved. It returns samples[round][instance].
func runThroughput(ctx context.Context, insts []instance, rounds int, d time.Duration, progress io.Writer) ([][]figures, error) {
	return interleave(ctx, "throughput", namesOf(insts), rounds, progress, func(ctx context.Context, i int) (figures, error) {
		return measureThroughput(ctx, insts[i], d)
	})
}

// measureThroughput runs the workers on in for d and returns their
// operations per second.
func measureThroughput(ctx context.Context, in instance, d time.Duration) (_ figures, err error) {
	lockers := make([]locker, throughputWorkers)
	for w := range lockers {
		lockers[w] = in.l
	}
	if in.floor {
		for w := range lockers {
			if lockers[w], err = in.open(ctx, in.addr); err != nil {
				closeLockers(lockers[:w])
				return nil, err
			}
		}
		defer func() { err = errors.Join(err, closeLockers(lockers)) }()
	}
	runtime.GC()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ops     int64
		stalled int
		last    time.Time // when the last worker that did not stall ended
		errs    []error
	)
	start := time.Now()
	deadline := start.Add(d)
	// A Lock still waiting stallGrace after the round's end, on a key no
	// one holds, has stalled: its worker stops and is counted, rather
	// than holding up the run.
	lctx, cancel := context.WithDeadline(ctx, deadline.Add(stallGrace))
	defer cancel()
	for w, l := range lockers {
		key := in.key + ":t" + strconv.Itoa(w)
		wg.Go(func() {
			var n int64
			var err error
			stuck := false
			for time.Now().Before(deadline) {
				var unlock func(context.Context) error
				if unlock, err = l.Lock(lctx, key); err != nil {
					stuck = lctx.Err() != nil && ctx.Err() == nil
					err = fmt.Errorf("lock: %w", err)
					break
				}
				if err = unlock(ctx); err != nil {
					err = fmt.Errorf("unlock: %w", err)
					break
				}
				n++
			}
			end := time.Now()
			mu.Lock()
			defer mu.Unlock()
			ops += n
			switch {
			case stuck:
				stalled++
			case err != nil:
				errs = append(errs, err)
			case end.After(last):
				last = end
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	elapsed := d
	if !last.IsZero() {
		elapsed = last.Sub(start)
	}
	return figures{float64(ops) / elapsed.Seconds(), float64(stalled)}, nil
}

// closeLockers closes each of ls and returns their errors joined.
func closeLockers(ls []locker) error {
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
