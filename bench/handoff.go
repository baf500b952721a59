package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/internal/cmdstats"
	"github.com/batonlock/baton/internal/latency"
)

// handoffLockers is scenario 3's number of lockers on the one key, each
// an instance of its own, as separate processes would be.
const handoffLockers = 8

// handoffColumns are scenario 3's figures, in the order of figures.
var handoffColumns = []column{
	{name: "acq/s", json: "acq_per_s", format: asCount, ratio: true},
	{name: "hand-off p50", json: "handoff_p50_us", nanos: true, format: asDuration, ratio: true},
	{name: "hand-off p99", json: "handoff_p99_us", nanos: true, format: asDuration, ratio: true},
	{name: "kept", json: "kept", format: asPercent},
	{name: "wait p99", json: "wait_p99_us", nanos: true, format: asDuration, ratio: true},
	{name: "wait max", json: "wait_max_us", nanos: true, format: asDuration, ratio: true},
	{name: "Jain", json: "jain", format: asFraction},
	{name: "cmds/acq", json: "cmds_per_acq", format: asOne, ratio: true},
	{name: "threaded writes/acq", json: "threaded_writes_per_acq", format: asOne},
}

// handoffResult is scenario 3's outcome.
type handoffResult struct {
	samples [][]figures // [round][group], in handoffColumns' order
	// cmds is each group's server commands summed over the rounds,
	// without the INFOs and INCRs, and acquisitions its acquisitions.
	cmds         []cmdstats.Stats
	acquisitions []int64
	// waits is each group's Lock waits over all the rounds, for the
	// plots.
	waits []*valueLog
}

// handoffRound is what one group did in one round.
type handoffRound struct {
	f            figures
	cmds         cmdstats.Stats
	acquisitions int64
}

// runHandoff is scenario 3: each group's lockers contend for its key for
// d per round, each hold one INCR through admin. Rounds are interleaved.
// Every hand-off, hold and unlock longer than slow (0: none) is reported
// to progress as it happens, to tell a stall of the machine, which slows
// the holds of the bench's own client too, from a lock's.
func runHandoff(ctx context.Context, groups []lockerGroup, admin *redis.Client, rounds int, d, slow time.Duration, progress io.Writer) (handoffResult, error) {
	res := handoffResult{
		samples:      make([][]figures, rounds),
		cmds:         make([]cmdstats.Stats, len(groups)),
		acquisitions: make([]int64, len(groups)),
		waits:        make([]*valueLog, len(groups)),
	}
	for i := range groups {
		res.cmds[i] = cmdstats.Stats{}
		res.waits[i] = &valueLog{}
	}
	names := namesOf(groups)
	slowReport := newSlowSteps(slow, progress)
	rs, err := interleave(ctx, "hand-off", names, rounds, progress, func(ctx context.Context, i int) (handoffRound, error) {
		return measureHandoff(ctx, groups[i], admin, d, res.waits[i], slowReport)
	})
	if err != nil {
		return handoffResult{}, err
	}
	for r, round := range rs {
		res.samples[r] = make([]figures, len(groups))
		for i, hr := range round {
			res.samples[r][i] = hr.f
			res.acquisitions[i] += hr.acquisitions
			for name, c := range hr.cmds {
				sum := res.cmds[i][name]
				sum.Calls += c.Calls
				res.cmds[i][name] = sum
			}
		}
	}
	return res, nil
}

// measureHandoff runs g's lockers against each other for d.
//
// A Lock's wait runs from its call to its return; one that the end of the
// round cut short counts as a wait until the end, so a locker starved for
// the whole round shows as the longest wait. A hand-off runs from the
// moment a holder starts its release to the moment the Lock of another
// locker returns; an acquisition by the locker that just released is not
// a hand-off but a lock kept, counted apart. The server's commands are
// read from INFO commandstats before and after the round, without the
// INFOs and the holds' INCRs.
func measureHandoff(ctx context.Context, g lockerGroup, admin *redis.Client, d time.Duration, waits *valueLog, slow *slowSteps) (handoffRound, error) {
	runtime.GC()
	before, err := readServer(ctx, admin)
	if err != nil {
		return handoffRound{}, err
	}
	h := &handoffRun{
		g: g, admin: admin,
		waits: latency.NewRecorder(), allWaits: waits, handoffs: latency.NewRecorder(),
		counts: make([]int64, len(g.lockers)), slow: slow,
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	h.start = time.Now()
	h.deadline = h.start.Add(d)
	rctx, cancel := context.WithDeadline(ctx, h.deadline)
	defer cancel()
	for k, l := range g.lockers {
		wg.Go(func() {
			if err := h.holdLoop(ctx, rctx, k, l); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return handoffRound{}, err
	}
	after, err := readServer(ctx, admin)
	if err != nil {
		return handoffRound{}, err
	}
	server, err := after.since(before)
	if err != nil {
		return handoffRound{}, err
	}
	// The counter goes with the lock's keys rather than stay on a server
	// given with --addr.
	if err := admin.Expire(ctx, g.counter, lockTTL).Err(); err != nil {
		return handoffRound{}, fmt.Errorf("expiring the counter: %w", err)
	}
	var total int64
	for _, n := range h.counts {
		total += n
	}
	if total == 0 {
		return handoffRound{}, errors.New("no locker acquired the lock")
	}
	cmds := server.cmds.Without("incr")
	hs, ws := h.handoffs.Summary(), h.waits.Summary()
	f := figures{
		float64(total) / d.Seconds(),
		float64(hs.P50), float64(hs.P99),
		float64(h.kept.Load()) / float64(total),
		float64(ws.P99), float64(ws.Max),
		jain(h.counts),
		float64(cmds.Calls()) / float64(total),
		float64(server.threaded) / float64(total),
	}
	return handoffRound{f: f, cmds: cmds, acquisitions: total}, nil
}

// handoffRun is one round of one group, shared by its lockers'
// goroutines.
type handoffRun struct {
	g               lockerGroup
	admin           *redis.Client
	start, deadline time.Time
	// The recorders are safe for concurrent use.
	waits, handoffs *latency.Recorder
	allWaits        *valueLog // every wait of every round, for the plots
	// counts[k] is locker k's acquisitions, written by its goroutine
	// alone and read after they all ended.
	counts []int64
	// released is the last release started and not yet followed by an
	// acquisition, or nil: swapped by each acquirer.
	released atomic.Pointer[release]
	// kept counts acquisitions by the locker that had just released.
	kept atomic.Int64
	slow *slowSteps
}

// release is a holder starting its release.
type release struct {
	at time.Duration // since the round's start
	by int           // the locker's index
}

// holdLoop is locker k's part: Lock, one INCR, Unlock, until rctx is done
// or its deadline has passed. Holds and releases run on ctx, so that a
// holder at the end of the round still releases.
func (h *handoffRun) holdLoop(ctx, rctx context.Context, k int, l locker) error {
	for rctx.Err() == nil {
		t0 := time.Now()
		unlock, err := l.Lock(rctx, h.g.key)
		acquired := time.Now()
		if err != nil {
			// A client may fail on the deadline, an i/o timeout, before
			// rctx says it is done.
			if rctx.Err() != nil || !acquired.Before(h.deadline) {
				h.recordWait(acquired.Sub(t0))
				return nil
			}
			return fmt.Errorf("lock: %w", err)
		}
		h.recordWait(acquired.Sub(t0))
		if r := h.released.Swap(nil); r != nil {
			if r.by == k {
				h.kept.Add(1)
			} else {
				took := acquired.Sub(h.start) - r.at
				h.handoffs.Record(took)
				h.slow.note(h.g.name, k, "hand-off", took, r.at)
			}
		}
		h.counts[k]++
		if err := h.admin.Incr(ctx, h.g.counter).Err(); err != nil {
			_ = unlock(ctx)
			return fmt.Errorf("incr: %w", err)
		}
		releasing := time.Since(h.start)
		h.slow.note(h.g.name, k, "hold", releasing-acquired.Sub(h.start), acquired.Sub(h.start))
		h.released.Store(&release{at: releasing, by: k})
		if err := unlock(ctx); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
		h.slow.note(h.g.name, k, "unlock", time.Since(h.start)-releasing, releasing)
	}
	return nil
}

// slowSteps reports the steps of scenario 3 that took longer than its
// threshold; a nil *slowSteps reports none.
type slowSteps struct {
	over time.Duration
	mu   sync.Mutex // serializes the lockers' writes to w
	w    io.Writer
}

func newSlowSteps(over time.Duration, w io.Writer) *slowSteps {
	if over <= 0 {
		return nil
	}
	return &slowSteps{over: over, w: w}
}

// note reports the step of impl's locker k that began at, into the
// round, and took took, if that is over the threshold.
func (s *slowSteps) note(impl string, k int, step string, took, at time.Duration) {
	if s == nil || took <= s.over {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "slow step: %s, locker %d, %s took %v, %v into the round\n", impl, k, step, took, at)
}

// recordWait records a Lock's wait for the table and for the plots.
func (h *handoffRun) recordWait(d time.Duration) {
	h.waits.Record(d)
	h.allWaits.Add(d)
}

// jain is Jain's fairness index of counts: (Σx)² / (n·Σx²), 1 when all
// are equal, 1/n when one has everything; 0 when all are 0.
func jain(counts []int64) float64 {
	var sum, sq float64
	for _, c := range counts {
		sum += float64(c)
		sq += float64(c) * float64(c)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * sq)
}

// writeHandoffCommands writes, for each group, the commands the server
// ran per acquisition over all the rounds, most first: where cmds/acq
// comes from.
func writeHandoffCommands(w io.Writer, names []string, res handoffResult) error {
	for i, name := range names {
		n := res.acquisitions[i]
		if n == 0 {
			continue
		}
		var parts []string
		for _, c := range res.cmds[i].Names() {
			parts = append(parts, fmt.Sprintf("%s %s", c, asPer(res.cmds[i][c].Calls, n)))
		}
		if _, err := fmt.Fprintf(w, "- %s: %s\n", name, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// asPercent writes a fraction as a percentage with no decimals.
func asPercent(x float64) string { return strconv.FormatFloat(100*x, 'f', 0, 64) + "%" }

// asPer writes calls/n with two decimals.
func asPer(calls, n int64) string {
	return strconv.FormatFloat(float64(calls)/float64(n), 'f', 2, 64)
}
