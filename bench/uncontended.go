package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/batonlock/baton/internal/latency"
)

// sample is what one implementation did in one round.
type sample struct {
	lat latency.Summary
	// cpuPerOp is the process's CPU time, user and system, over the
	// round's operations, divided by their number.
	cpuPerOp time.Duration
	// all is every operation's latency, for the plots.
	all *valueLog
}

// runUncontended is scenario 1: Lock+Unlock back to back on a key no one
// else wants, ops times per implementation per round. Round r starts with
// instance r mod n and goes on in order, so that each implementation runs
// in each position equally often and none always follows the same one.
// It returns samples[round][instance].
func runUncontended(ctx context.Context, insts []instance, rounds, ops int, progress io.Writer) ([][]sample, error) {
	out := make([][]sample, rounds)
	for r := range rounds {
		fmt.Fprintf(progress, "uncontended: round %d/%d\n", r+1, rounds)
		out[r] = make([]sample, len(insts))
		for j := range insts {
			i := (r + j) % len(insts)
			var s sample
			var err error
			labelled(ctx, insts[i].name, func(ctx context.Context) {
				s, err = measureOps(ctx, ops, func(ctx context.Context) error { return lockUnlock(ctx, insts[i].l, insts[i].key) })
			})
			if err != nil {
				return nil, fmt.Errorf("uncontended, round %d, %s: %w", r+1, insts[i].name, err)
			}
			out[r][i] = s
		}
	}
	return out, nil
}

// measureOps runs op ops times, back to back, and times each.
func measureOps(ctx context.Context, ops int, op func(context.Context) error) (sample, error) {
	rec, all := latency.NewRecorder(), &valueLog{}
	// The garbage of the implementation measured before is collected now
	// rather than on this one's time.
	runtime.GC()
	before, err := cpuTime()
	if err != nil {
		return sample{}, err
	}
	for range ops {
		start := time.Now()
		if err := op(ctx); err != nil {
			return sample{}, err
		}
		took := time.Since(start)
		rec.Record(took)
		all.Add(took)
	}
	after, err := cpuTime()
	if err != nil {
		return sample{}, err
	}
	return sample{lat: rec.Summary(), cpuPerOp: (after - before) / time.Duration(ops), all: all}, nil
}
