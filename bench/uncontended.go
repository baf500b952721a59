package main

import (
	"context"
	"io"
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"

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
	// cmdsPerOp is the server's commands per operation, from INFO
	// commandstats, commands inside scripts included, the INFOs not.
	cmdsPerOp float64
	// serverCPUPerOp is the server process's CPU time, user and system,
	// over the round, divided by its operations: its share of the cost,
	// networking included, which commandstats' times leave out.
	serverCPUPerOp time.Duration
}

// runUncontended is scenario 1: Lock+Unlock back to back on a key no one
// else wants, ops times per implementation per round, interleaved. It
// returns samples[round][instance].
func runUncontended(ctx context.Context, insts []instance, admin *redis.Client, rounds, ops int, progress io.Writer) ([][]sample, error) {
	return interleave(ctx, "uncontended", namesOf(insts), rounds, progress, func(ctx context.Context, i int) (sample, error) {
		return measureOps(ctx, admin, ops, func(ctx context.Context) error { return lockUnlock(ctx, insts[i].l, insts[i].key) })
	})
}

// measureOps runs op ops times, back to back, and times each. It reads
// the server's work through admin before and after.
func measureOps(ctx context.Context, admin *redis.Client, ops int, op func(context.Context) error) (sample, error) {
	serverBefore, err := readServer(ctx, admin)
	if err != nil {
		return sample{}, err
	}
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
	serverAfter, err := readServer(ctx, admin)
	if err != nil {
		return sample{}, err
	}
	server, err := serverAfter.since(serverBefore)
	if err != nil {
		return sample{}, err
	}
	return sample{
		lat: rec.Summary(), cpuPerOp: (after - before) / time.Duration(ops), all: all,
		cmdsPerOp:      float64(server.cmds.Calls()) / float64(ops),
		serverCPUPerOp: server.cpu / time.Duration(ops),
	}, nil
}
