package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// passOverLimit is the most times scenario 4's holder takes the lock
// back in one trial; a waiter still waiting then is counted as passed
// over this many times.
const passOverLimit = 1000

// waiterSettle is how long the waiter's Lock has waited before the
// holder starts its loop: ample for any implementation here to have
// subscribed or started retrying, so that every trial measures a waiter
// already waiting.
const waiterSettle = 20 * time.Millisecond

// waiterTrial is one trial of scenario 4 for one implementation.
type waiterTrial struct {
	// passed counts the holder's acquisitions between its first release
	// and the waiter's acquisition.
	passed int
	// wait runs from the holder's first release to the waiter's Lock
	// returning, or to the trial's end for a trial that stalled.
	wait time.Duration
	// stalled is set where a Lock, the waiter's or the holder's, was
	// still waiting stallGrace after the key was freed for it: a lost
	// wake-up. The trial ends there.
	stalled bool
}

// runWaiter is scenario 4: in each trial, for each group, its first
// locker holds the key while its second calls Lock once; then the first
// releases and takes the key back, with nothing in between, until the
// waiter has had it or passOverLimit times. Trials are interleaved as
// rounds are. It returns out[trial][group].
func runWaiter(ctx context.Context, groups []lockerGroup, trials int, progress io.Writer) ([][]waiterTrial, error) {
	names := namesOf(groups)
	return interleave(ctx, "remote waiter", names, trials, progress, func(ctx context.Context, i int) (waiterTrial, error) {
		return waiterTrialOnce(ctx, groups[i])
	})
}

// waiterTrialOnce runs one trial of g: its lockers[0] is the holder,
// lockers[1] the waiter.
func waiterTrialOnce(ctx context.Context, g lockerGroup) (tr waiterTrial, err error) {
	holder, waiter := g.lockers[0], g.lockers[1]
	unlock, err := holder.Lock(ctx, g.key)
	if err != nil {
		return waiterTrial{}, fmt.Errorf("holder's first lock: %w", err)
	}
	held := true
	w := startWaiter(ctx, waiter, g.key)
	defer func() {
		if held {
			err = errors.Join(err, unlock(ctx))
		}
		if werr := w.stop(); werr != nil {
			tr, err = waiterTrial{}, errors.Join(err, werr)
		}
	}()

	select {
	case <-time.After(waiterSettle):
	case <-ctx.Done():
		return waiterTrial{}, ctx.Err()
	}
	if w.acquired.Load() {
		return waiterTrial{}, errors.New("the waiter got the key while the holder held it")
	}
	start := time.Now()
	for tr.passed < passOverLimit {
		held = false
		if err := unlock(ctx); err != nil {
			return waiterTrial{}, fmt.Errorf("holder's unlock: %w", err)
		}
		var stalled bool
		if unlock, stalled, err = lockWithin(ctx, holder, g.key); err != nil {
			return waiterTrial{}, fmt.Errorf("holder's lock: %w", err)
		}
		if stalled {
			tr.stalled = true
			break
		}
		held = true
		if w.acquired.Load() {
			break
		}
		tr.passed++
	}
	if held {
		held = false
		if err := unlock(ctx); err != nil {
			return waiterTrial{}, fmt.Errorf("holder's last unlock: %w", err)
		}
	}
	select {
	case <-w.done:
		tr.wait = w.gotAt.Sub(start)
	case <-time.After(stallGrace):
		tr.stalled, tr.wait = true, time.Since(start)
	case <-ctx.Done():
		return waiterTrial{}, ctx.Err()
	}
	return tr, nil
}

// lockWithin takes key with l, or reports stalled where the Lock is
// still waiting stallGrace after the call: the key is free, or the
// waiter's for a moment, so it has lost its wake-up. The lock is held on
// a context of its own, which the returned unlock ends after releasing:
// some locks (rueidislock) let go of a lock whose context ends.
func lockWithin(ctx context.Context, l locker, key string) (unlock func(context.Context) error, stalled bool, err error) {
	hctx, cancel := context.WithCancel(ctx)
	grace := time.AfterFunc(stallGrace, cancel)
	u, err := l.Lock(hctx, key)
	ranOut := !grace.Stop()
	switch {
	case err != nil && ranOut && ctx.Err() == nil:
		cancel()
		return nil, true, nil
	case err != nil:
		cancel()
		return nil, false, err
	case ranOut:
		// Taken just as the grace ran out, on a context now ended.
		err := u(ctx)
		cancel()
		return nil, true, err
	}
	return func(ctx context.Context) error {
		defer cancel()
		return u(ctx)
	}, false, nil
}

// waiterRun is the waiter's Lock, run by a goroutine of its own.
type waiterRun struct {
	cancel   context.CancelFunc
	done     chan struct{} // closed when the goroutine ends
	acquired atomic.Bool
	gotAt    time.Time // when Lock returned; written before done is closed
	err      error     // likewise
}

// startWaiter calls l.Lock(key) once, in a goroutine that stop ends.
func startWaiter(ctx context.Context, l locker, key string) *waiterRun {
	wctx, cancel := context.WithCancel(ctx)
	w := &waiterRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		u, err := l.Lock(wctx, key)
		w.gotAt = time.Now()
		if err != nil {
			if wctx.Err() == nil {
				w.err = fmt.Errorf("waiter's lock: %w", err)
			}
			return
		}
		w.acquired.Store(true)
		if err := u(ctx); err != nil {
			w.err = fmt.Errorf("waiter's unlock: %w", err)
		}
	}()
	return w
}

// stop cancels the waiter's Lock if it is still waiting, waits for its
// goroutine and returns its error.
func (w *waiterRun) stop() error {
	w.cancel()
	<-w.done
	return w.err
}

// writeWaiterTable writes scenario 4 as a markdown table: per group, the
// distribution of passed-over counts and of waits over the trials.
func writeWaiterTable(w io.Writer, names []string, trials [][]waiterTrial, base int) error {
	_, err := fmt.Fprintf(w, `| implementation | passed over p50 | p90 | max | trials never passed | trials passed %d times | trials stalled | wait p50 | wait p90 | wait max | wait ÷ %s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
`, passOverLimit, baseline)
	if err != nil {
		return err
	}
	for i, name := range names {
		s := summarizeWaiter(trials, i, base)
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %d/%d | %d/%d | %d/%d | %s | %s | %s | %s |\n", name,
			asCount(s.passedP50), asCount(s.passedP90), asCount(s.passedMax),
			s.never, s.trials, s.capped, s.trials, s.stalled, s.trials,
			asDuration(s.waitP50), asDuration(s.waitP90), asDuration(s.waitMax), times(s.waitRatio))
		if err != nil {
			return err
		}
	}
	return nil
}

// waiterSummary is one group's trials of scenario 4.
type waiterSummary struct {
	passedP50, passedP90, passedMax float64 // times passed over
	trials, never, capped, stalled  int     // trials: all, never passed over, passed over passOverLimit times, stalled
	waitP50, waitP90, waitMax       float64 // nanoseconds
	waitRatio                       float64 // the median of the per-trial ratios to the baseline's wait
}

// summarizeWaiter summarizes group i's trials, with ratios to the group
// at base (none when base is -1).
func summarizeWaiter(trials [][]waiterTrial, i, base int) waiterSummary {
	var passed, waits, ratios []float64
	s := waiterSummary{trials: len(trials)}
	for _, trial := range trials {
		t := trial[i]
		if t.stalled {
			// A lost wake-up is no count of passes: it is counted
			// apart, and left out of the rest.
			s.stalled++
			continue
		}
		passed = append(passed, float64(t.passed))
		waits = append(waits, float64(t.wait))
		if base >= 0 && trial[base].wait > 0 && !trial[base].stalled {
			ratios = append(ratios, float64(t.wait)/float64(trial[base].wait))
		}
		switch t.passed {
		case 0:
			s.never++
		case passOverLimit:
			s.capped++
		}
	}
	s.passedP50, s.passedP90, s.passedMax = quantile(passed, 0.5), quantile(passed, 0.9), quantile(passed, 1)
	s.waitP50, s.waitP90, s.waitMax = quantile(waits, 0.5), quantile(waits, 0.9), quantile(waits, 1)
	s.waitRatio = median(ratios)
	return s
}

// passedOverCounts returns, for each count of times passed over, how
// many trials of group i had it, as "count: trials" in increasing
// counts: the whole distribution in a line.
func passedOverCounts(trials [][]waiterTrial, i int) string {
	counts := map[int]int{}
	for _, trial := range trials {
		counts[trial[i].passed]++
	}
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for n, k := range keys {
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d: %d", k, counts[k])
	}
	return b.String()
}

// quantile is the q-quantile of xs by the nearest-rank method: the
// smallest value with at least q of them at or below it; 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
