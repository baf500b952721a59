package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cmdstats"
	"github.com/batonlock/baton/internal/latency"
	"github.com/batonlock/baton/internal/runkeys"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/subscriber"
)

const (
	// benchClientName names the bench's connections in CLIENT LIST.
	benchClientName = "baton-bench"
	// benchLeftoverTTL bounds how long what a killed bench leaves behind
	// lives: fencing counters and Modify's state, whose defaults are an
	// hour. Locks and queues have short TTLs of their own.
	benchLeftoverTTL = time.Minute
	// benchCleanupTimeout bounds the cleanup after the run, which runs on
	// a context of its own since the run's may be done.
	benchCleanupTimeout = 10 * time.Second
)

// benchState is what a Modify increments.
type benchState struct {
	N int64 `json:"n"`
}

// benchRun is one run: its operation, keys and measurements.
type benchRun struct {
	cfg  benchConfig
	keys []string
	op   func(ctx context.Context, key string) error
	rec  *latency.Recorder
	// done counts each key's completed operations, for the check of
	// Modify's counters; written by the workers.
	done []atomic.Int64
}

// benchmark runs c against addr and returns what it measured. Whatever
// happens, the lock is closed (releasing every lease) and the run's keys
// are deleted before it returns.
func benchmark(ctx context.Context, addr string, c benchConfig, notes io.Writer) (res benchResult, err error) {
	prefix, err := runkeys.NewPrefix(benchKeyBase)
	if err != nil {
		return res, err
	}
	admin, err := conn.NewClient(addr, conn.WithClientName(benchClientName))
	if err != nil {
		return res, fmt.Errorf("connecting: %w", err)
	}
	defer admin.Close()

	opts := []lock.Option{
		lock.WithKeyPrefix(prefix),
		lock.WithFenceRetention(benchLeftoverTTL),
		lock.WithConnOptions(conn.WithClientName(benchClientName)),
	}
	if c.mode == "fair" {
		opts = append(opts, lock.WithFair())
	}
	l, err := lock.Open(ctx, addr, opts...)
	if err != nil {
		return res, openError(c.mode, err)
	}
	// Runs after l.Close, so that no release or queue write lands after
	// it.
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), benchCleanupTimeout)
		defer cancel()
		n, cerr := runkeys.Remove(cctx, admin, prefix)
		res.KeysRemoved = n
		// After a failure, the server is often why the cleanup failed
		// too: the first error says it, and every key expires within
		// benchLeftoverTTL regardless.
		if cerr != nil && err == nil {
			err = cerr
		}
	}()
	defer func() {
		// After a failure or an interrupt, the first error says more.
		if cerr := l.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the lock: %w", cerr)
		}
	}()

	r := &benchRun{cfg: c, keys: benchKeys(c.keys), rec: latency.NewRecorder(), done: make([]atomic.Int64, c.keys)}
	var m *manager.Manager[benchState]
	if c.op == "modify" {
		m = manager.New[benchState](l, manager.WithKeyPrefix(prefix), manager.WithStateTTL(benchLeftoverTTL))
		defer func() {
			if cerr := m.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("closing the manager: %w", cerr)
			}
		}()
		r.op = modifyOp(m)
	} else {
		r.op = lockOp(l)
	}
	res, err = r.measure(ctx, admin, notes)
	if err != nil {
		return res, err
	}
	res.Server, res.KeyPrefix = redactAddr(addr), prefix
	if m != nil {
		err = r.checkCounters(ctx, m)
	}
	return res, err
}

// measure runs the operations between two readings of INFO commandstats
// and returns what it measured.
func (r *benchRun) measure(ctx context.Context, admin *conn.Client, notes io.Writer) (benchResult, error) {
	// A server that refuses INFO (an ACL, a managed service, the embedded
	// server) can still be measured; the report then says why it has no
	// commands per acquisition.
	before, statsErr := cmdstats.Read(ctx, admin)
	stopProgress := startBenchProgress(notes, r.cfg.duration, r.rec.Count)
	elapsed, err := r.run(ctx)
	stopProgress()
	if err != nil {
		return benchResult{}, err
	}
	res := newBenchResult(r.cfg, elapsed, r.rec.Summary())
	if statsErr != nil {
		res.CommandsUnavailable = oneLine(statsErr)
		return res, nil
	}
	res.Commands, err = commandsPerAcquisition(ctx, admin, before, res.Ops)
	return res, err
}

// run starts the workers and waits for them. The first error stops every
// worker and is returned; an interrupt returns ctx's error.
func (r *benchRun) run(ctx context.Context) (time.Duration, error) {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	start := time.Now()
	deadline := start.Add(r.cfg.duration)
	var wg sync.WaitGroup
	for g := range r.cfg.concurrency {
		wg.Go(func() {
			if err := r.worker(runCtx, g, deadline); err != nil {
				stop(err) // the first cause stays; later ones are its echoes
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return elapsed, fmt.Errorf("interrupted after %d operations: %w", r.rec.Count(), ctx.Err())
	}
	if cause := context.Cause(runCtx); cause != nil {
		return elapsed, cause
	}
	return elapsed, nil
}

// worker runs operations back to back until the deadline. An operation
// that is running at the deadline finishes and counts: cutting it short
// would count a cancellation, not the lock.
func (r *benchRun) worker(ctx context.Context, g int, deadline time.Time) error {
	k := g % len(r.keys)
	for ctx.Err() == nil {
		start := time.Now()
		if !start.Before(deadline) {
			return nil
		}
		if err := r.op(ctx, r.keys[k]); err != nil {
			return err
		}
		r.rec.Record(time.Since(start))
		r.done[k].Add(1)
		k = (k + r.cfg.concurrency) % len(r.keys)
	}
	return ctx.Err()
}

func lockOp(l *lock.Locker) func(context.Context, string) error {
	return func(ctx context.Context, key string) error {
		lease, err := l.Lock(ctx, key)
		if err != nil {
			return fmt.Errorf("lock %q: %w", key, err)
		}
		if err := lease.Unlock(ctx); err != nil {
			return fmt.Errorf("unlock %q: %w", key, err)
		}
		return nil
	}
}

func modifyOp(m *manager.Manager[benchState]) func(context.Context, string) error {
	incr := func(s *benchState) error {
		s.N++
		return nil
	}
	return func(ctx context.Context, key string) error {
		if err := m.Modify(ctx, key, incr); err != nil {
			return fmt.Errorf("modify %q: %w", key, err)
		}
		return nil
	}
}

// openError explains a failed lock.Open; fast mode's usual failure has a
// way out that a person at the command line can take.
func openError(mode string, err error) error {
	if errors.Is(err, subscriber.ErrKeyspaceEvents) {
		return fmt.Errorf("opening the lock (%s mode): %w; --mode fair needs no keyspace events", mode, err)
	}
	return fmt.Errorf("opening the lock (%s mode): %w", mode, err)
}

// commandsPerAcquisition takes the second reading of INFO commandstats
// and divides what the server ran by the operations. The first reading's
// INFO is left out: it is the bench's, not the lock's.
func commandsPerAcquisition(ctx context.Context, admin *conn.Client, before cmdstats.Stats, ops int64) (*benchCommands, error) {
	after, err := cmdstats.Read(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("reading commandstats after the run: %w", err)
	}
	d, err := cmdstats.Delta(before, after)
	if err != nil {
		return nil, err
	}
	return newBenchCommands(d.Without("info"), ops), nil
}

// checkCounters reads back every counter Modify incremented: each must
// equal the Modify calls that returned success on its key. A difference
// is a lost or doubled update, which the lock exists to prevent.
func (r *benchRun) checkCounters(ctx context.Context, m *manager.Manager[benchState]) error {
	for k, key := range r.keys {
		want := r.done[k].Load()
		if want == 0 {
			continue
		}
		s, err := m.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("reading back the counter of %q: %w", key, err)
		}
		if s.N != want {
			return fmt.Errorf("%w: the counter of %q is %d after %d increments", errLostUpdate, key, s.N, want)
		}
	}
	return nil
}

// errLostUpdate is a counter that does not match its increments.
var errLostUpdate = errors.New("lost or doubled update")
