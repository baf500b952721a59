package integration_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/lock"
)

const (
	// deadTTL is the lock TTL of the dead-process tests: a holder that
	// died blocks the others this long at most.
	deadTTL = time.Second
	// deadSlack is what the others may take beyond it on a loaded
	// machine.
	deadSlack = time.Second
	// deadQueuedBound bounds the hand-off past dead queued waiters, once
	// the server has seen their processes' subscribe connections end: the
	// release skips them and hands the lock to the live waiter. (A release
	// that Redis runs before it has read the end of a dead process's
	// connection takes that waiter for alive and hands it the lock for the
	// releaser's TTL, as a holder that dies keeps it: the test waits for
	// the deaths to be seen, so that its bound does not hang on that
	// race.) Over 50 runs of each case (-race, containers), before the
	// test waited so, the live waiter held the lock a median 1.0ms after
	// the release.
	deadQueuedBound = deadSlack
)

// TestADeadProcess SIGKILLs a worker process while it holds a lock, in
// both modes, and while it is queued behind others in fair mode: the
// others carry on, a dead holder costing at most its TTL, dead queued
// waiters the hand-off past them.
func TestADeadProcess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		for _, fair := range []bool{false, true} {
			mode := mix{fair: fair, ttl: deadTTL}
			t.Run(mode.String()+"/holding", func(t *testing.T) {
				srv := b.start(t, spec{})
				w := startWorker(t, job{Addr: srv.Addr(), Do: "hold", Key: "k", Fair: fair, TTL: int64(deadTTL)})
				waiter, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer waiter.close()
				got := make(chan error, 1)
				go func() {
					callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					lease, err := waiter.locker.Lock(callCtx, "k")
					if err == nil {
						err = lease.Unlock(callCtx)
					}
					got <- err
				}()
				time.Sleep(100 * time.Millisecond) // waiting, not holding
				killed := time.Now()
				w.kill()
				select {
				case err := <-got:
					require.NoError(t, err)
					t.Logf("%s: the waiter held %v after the holder was killed", mode, time.Since(killed).Round(time.Millisecond))
					require.Less(t, time.Since(killed), deadTTL+deadSlack)
				case <-time.After(deadTTL + deadSlack):
					t.Fatalf("the waiter did not get the lock within %v of the holder's death", deadTTL+deadSlack)
				}
			})
		}
		for _, dead := range []int{1, 3} {
			t.Run("fair/queued/"+strconv.Itoa(dead)+" dead", func(t *testing.T) {
				srv := b.start(t, spec{})
				mode := mix{fair: true, ttl: time.Minute}
				holder, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer holder.close()
				held, err := holder.locker.Lock(ctx, "k")
				require.NoError(t, err)
				var workers []*worker
				for i := range dead {
					workers = append(workers, startWorker(t, job{Addr: srv.Addr(), Do: "queue", Key: "k", Fair: true}))
					waitQueued(t, holder.locker, "k", i+1)
				}
				live, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer live.close()
				got := make(chan time.Time, 1)
				errs := make(chan error, 1)     // the Lock's, if it failed
				unlocked := make(chan error, 1) // the Unlock's, once it held
				go func() {
					lease, err := live.locker.Lock(ctx, "k")
					if err != nil {
						errs <- err
						return
					}
					got <- time.Now()
					unlocked <- lease.Unlock(ctx)
				}()
				waitQueued(t, holder.locker, "k", dead+1)
				channels := queuedChannels(t, srv.Addr(), "k", dead)
				for _, w := range workers {
					w.kill()
				}
				for _, ch := range channels {
					require.Eventually(t, func() bool {
						v, err := doAt(srv.Addr(), "PUBSUB", "NUMSUB", ch)
						return err == nil && len(v.Elems) == 2 && v.Elems[1].Int == 0
					}, 10*time.Second, time.Millisecond, "the server still counts a subscriber of a dead waiter's channel %s", ch)
				}
				released := time.Now()
				require.NoError(t, held.Unlock(ctx))
				select {
				case at := <-got:
					t.Logf("%d dead ahead: the live waiter held %v after the release", dead, at.Sub(released).Round(10*time.Microsecond))
					require.Less(t, at.Sub(released), deadQueuedBound)
				case err := <-errs:
					t.Fatal(err)
				case <-time.After(deadQueuedBound):
					t.Fatalf("the live waiter did not get the lock within %v of the release", deadQueuedBound)
				}
				require.NoError(t, <-unlocked)
			})
		}
	})
}

// queuedChannels is where the first n waiters queued for key hear their
// hand-offs: the channel of each's queue entry, "<deadline> <id>
// <channel>".
func queuedChannels(t *testing.T, addr, key string, n int) []string {
	t.Helper()
	owners, err := doAt(addr, "ZRANGE", "baton:{"+key+"}:queue", "0", strconv.Itoa(n-1))
	require.NoError(t, err)
	var channels []string
	for _, owner := range owners.Elems {
		entry, err := doAt(addr, "HGET", "baton:{"+key+"}:waiters", owner.Str)
		require.NoError(t, err)
		fields := strings.SplitN(entry.Str, " ", 3)
		require.Len(t, fields, 3, "a queue entry %q", entry.Str)
		channels = append(channels, fields[2])
	}
	require.Len(t, channels, n)
	return channels
}

// waitQueued waits until n owners are queued for key.
func waitQueued(t *testing.T, l *lock.Locker, key string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := l.Inspect(context.Background(), key)
		return err == nil && len(info.Queue) == n
	}, 10*time.Second, 5*time.Millisecond, "never %d queued", n)
}
