package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/internal/latency"
)

// lossesPerRound is how many losses each implementation has timed in a
// round of scenario 7 before the next takes its turn: rounds short
// enough that a slow spell of the machine falls on every implementation
// alike.
const lossesPerRound = 10

// lossWarmups is how many losses each implementation goes through,
// untimed, before the first round: a watch's first use sets it up
// (baton's Subscriber turns client tracking on).
const lossWarmups = 3

// lossGrace is how long scenario 7 waits for a holder to hear that its
// lock was deleted before it counts the loss as missed.
const lossGrace = 2 * time.Second

// lossWatcher is a lock whose holder can be told that the server lost
// its lock, deleted by another client, say: the locks scenario 7 times.
type lossWatcher interface {
	// LockWatched takes key and returns once the lock is held and
	// watched. admin is a plain connection to the server, for a lock
	// that must ask the server whether its watch is in place.
	LockWatched(ctx context.Context, key string, admin *redis.Client) (watchedLock, error)
}

// watchedLock is a lock that a lossWatcher holds and watches.
type watchedLock struct {
	// ctx ends once the holder has heard that the lock is lost.
	ctx context.Context
	// key is the lock's key in Redis, which scenario 7 deletes.
	key string
	// release ends the lock and its watch, lost or not.
	release func(context.Context) error
}

// lossNotice is one loss of scenario 7.
type lossNotice struct {
	// took runs from just before the DEL was sent to the holder's
	// context ending.
	took time.Duration
	// missed is set where the context had not ended lossGrace after the
	// DEL; took is then 0.
	missed bool
}

// openWatchers opens one instance of each of all's locks that can tell
// a holder of a lost lock, in all's order, each on a key of its own.
func openWatchers(ctx context.Context, addr, prefix string, all []impl) ([]lockerGroup, error) {
	var watching []impl
	for _, im := range all {
		if im.watchesLoss {
			watching = append(watching, im)
		}
	}
	groups, err := openGroups(ctx, addr, prefix, "n", 1, watching)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if _, ok := g.lockers[0].(lossWatcher); !ok {
			return nil, errors.Join(fmt.Errorf("%s: its locker cannot watch for a loss", g.name), closeEach(groups))
		}
	}
	return groups, nil
}

// runLostLease is scenario 7: for each group, losses times, its locker
// takes the group's key and watches it, a plain client deletes the
// lock's key, and the holder's context is timed to its end. The losses
// run in rounds of lossesPerRound, interleaved. It returns
// out[round][group], each round's losses in order.
func runLostLease(ctx context.Context, groups []lockerGroup, admin *redis.Client, losses int, progress io.Writer) ([][][]lossNotice, error) {
	for _, g := range groups {
		for range lossWarmups {
			if _, err := loseOnce(ctx, g.lockers[0].(lossWatcher), g.key, admin); err != nil {
				return nil, fmt.Errorf("lost lease, %s, warming up: %w", g.name, err)
			}
		}
	}
	rounds := (losses + lossesPerRound - 1) / lossesPerRound
	done := make([]int, len(groups))
	return interleave(ctx, "lost lease", namesOf(groups), rounds, progress, func(ctx context.Context, i int) ([]lossNotice, error) {
		n := min(lossesPerRound, losses-done[i])
		done[i] += n
		out := make([]lossNotice, n)
		for k := range out {
			var err error
			if out[k], err = loseOnce(ctx, groups[i].lockers[0].(lossWatcher), groups[i].key, admin); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

// loseOnce takes key with w, deletes the lock's key through admin and
// times the holder's hearing of it.
func loseOnce(ctx context.Context, w lossWatcher, key string, admin *redis.Client) (_ lossNotice, err error) {
	held, err := w.LockWatched(ctx, key, admin)
	if err != nil {
		return lossNotice{}, fmt.Errorf("lock: %w", err)
	}
	defer func() {
		if rerr := held.release(ctx); rerr != nil {
			err = errors.Join(err, fmt.Errorf("release: %w", rerr))
		}
	}()
	if held.ctx.Err() != nil {
		return lossNotice{}, fmt.Errorf("the lock's context ended before its key was deleted: %w", context.Cause(held.ctx))
	}
	// The end is read by a goroutine of its own, so that a holder that
	// hears before the DEL's reply comes back is timed as it heard.
	ended := make(chan time.Time, 1)
	stop := context.AfterFunc(held.ctx, func() { ended <- time.Now() })
	defer stop()
	start := time.Now()
	n, err := admin.Del(ctx, held.key).Result()
	if err != nil {
		return lossNotice{}, fmt.Errorf("DEL: %w", err)
	}
	if n != 1 {
		return lossNotice{}, fmt.Errorf("DEL %q found no key: not the lock's", held.key)
	}
	select {
	case at := <-ended:
		return lossNotice{took: at.Sub(start)}, nil
	case <-time.After(lossGrace):
		return lossNotice{missed: true}, nil
	case <-ctx.Done():
		return lossNotice{}, ctx.Err()
	}
}

// lossSummary is one group's losses in scenario 7.
type lossSummary struct {
	losses, missed int
	notice         latency.Summary // of the losses heard
	// ratio is the median of the per-loss ratios to the baseline's:
	// each round's k-th loss against the baseline's k-th in that round.
	ratio float64
}

// summarizeLosses summarizes group i's losses, with ratios to the group
// at base (none when base is -1).
func summarizeLosses(notices [][][]lossNotice, i, base int) lossSummary {
	var s lossSummary
	rec := latency.NewRecorder()
	var ratios []float64
	for _, round := range notices {
		for k, n := range round[i] {
			s.losses++
			if n.missed {
				s.missed++
				continue
			}
			rec.Record(n.took)
			if base >= 0 && k < len(round[base]) && !round[base][k].missed && round[base][k].took > 0 {
				ratios = append(ratios, float64(n.took)/float64(round[base][k].took))
			}
		}
	}
	s.notice, s.ratio = rec.Summary(), median(ratios)
	return s
}

// writeLossTable writes scenario 7 as a markdown table, a row per group.
func writeLossTable(w io.Writer, names []string, notices [][][]lossNotice, base int) error {
	_, err := fmt.Fprintf(w, `| implementation | losses | missed | notice p50 | notice p99 | notice max | notice ÷ %s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
`, baseline)
	if err != nil {
		return err
	}
	for i, name := range names {
		s := summarizeLosses(notices, i, base)
		_, err := fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s |\n", name, s.losses, s.missed,
			latency.Format(s.notice.P50), latency.Format(s.notice.P99), latency.Format(s.notice.Max), times(s.ratio))
		if err != nil {
			return err
		}
	}
	return nil
}

// lossRows are scenario 7's rows.
func lossRows(ids []string, notices [][][]lossNotice, base int) []jsonRow {
	out := make([]jsonRow, len(ids))
	for i, id := range ids {
		s := summarizeLosses(notices, i, base)
		out[i] = jsonRow{
			"impl": id, "losses": s.losses, "missed": s.missed,
			"notice_p50_us": microseconds(s.notice.P50), "notice_p99_us": microseconds(s.notice.P99), "notice_max_us": microseconds(s.notice.Max),
		}
		if base >= 0 {
			out[i]["ratios"] = map[string]float64{"notice_us": s.ratio}
		}
	}
	return out
}
