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
var throughputColumns = []column{{name: "ops/s", format: asCount, ratio: true}}

// runThroughput is scenario 2: throughputWorkers goroutines, each doing
// Lock+Unlock back to back on a key of its own, through one instance per
// implementation, for d per implementation per round. The floor, which
// is one connection and no client, gets a bare connection per goroutine.
// Rounds rotate as in runUncontended. It returns samples[round][instance].
func runThroughput(ctx context.Context, insts []instance, rounds int, d time.Duration, progress io.Writer) ([][]figures, error) {
	out := make([][]figures, rounds)
	for r := range rounds {
		fmt.Fprintf(progress, "throughput: round %d/%d\n", r+1, rounds)
		out[r] = make([]figures, len(insts))
		for j := range insts {
			i := (r + j) % len(insts)
			var f figures
			var err error
			labelled(ctx, insts[i].name, func(ctx context.Context) {
				f, err = measureThroughput(ctx, insts[i], d)
			})
			if err != nil {
				return nil, fmt.Errorf("throughput, round %d, %s: %w", r+1, insts[i].name, err)
			}
			out[r][i] = f
		}
	}
	return out, nil
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
		wg   sync.WaitGroup
		mu   sync.Mutex
		ops  int64
		errs []error
	)
	start := time.Now()
	deadline := start.Add(d)
	for w, l := range lockers {
		key := in.key + ":t" + strconv.Itoa(w)
		wg.Go(func() {
			var n int64
			var err error
			for time.Now().Before(deadline) {
				if err = lockUnlock(ctx, l, key); err != nil {
					break
				}
				n++
			}
			mu.Lock()
			ops += n
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return figures{float64(ops) / elapsed.Seconds()}, nil
}

// closeLockers closes each of ls and returns their errors joined.
func closeLockers(ls []locker) error {
	var errs []error
	for _, l := range ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
