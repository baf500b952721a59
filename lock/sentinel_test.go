package lock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// A Locker opened with a redis+sentinel URL reaches the primary the
// sentinels name, and after a failover the new one: its connections,
// killed by the sentinels as they reconfigure the old primary, dial again
// through them.
func TestALockerThroughSentinelsFollowsAFailover(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			s := redistest.StartSentinels(t, 2, 3)
			ctx := context.Background()
			// Both replicas acknowledge every write: the one promoted has
			// the lock, whichever it is.
			// A TTL longer than the failover takes to settle: the sentinels
			// turn the old primary into a replica only once they next look
			// at it, seconds later.
			l, err := lock.Open(ctx, s.URL(), modeOptions(mode, lock.WithTTL(time.Minute), lock.WithReplicaAck(2, time.Second))...)
			require.NoError(t, err)
			defer l.Close()

			held := mustLock(t, l, "k")
			before := held.Token()
			promoted := s.Failover(t, 30*time.Second)
			require.Equal(t, int64(1), promoted.Do(t, "EXISTS", "baton:{k}").Int, "the lock survived the failover")
			unlockCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			require.NoError(t, held.Unlock(unlockCtx), "released on the new primary")
			require.Zero(t, promoted.Do(t, "EXISTS", "baton:{k}").Int)

			lockCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			again, err := l.Lock(lockCtx, "k")
			require.NoError(t, err)
			require.Greater(t, again.Token(), before, "fencing tokens increase across the promotion")
			require.NoError(t, again.Unlock(lockCtx))
		})
	}
}

// Under contention from two Lockers, a failover costs waits, and fencing
// tokens keep increasing in the order of holding; with every replica's
// acknowledgement (WithReplicaAck), never two holders at once. Without
// it, a lock taken on the old primary after the promotion is lost with
// it, and the test does not count overlaps: it measures the wait.
func TestContentionThroughAFailoverThroughSentinels(t *testing.T) {
	for _, c := range []struct {
		mode string
		acks int
	}{{"fast", 2}, {"fair", 2}, {"fast", 0}} {
		t.Run(c.mode+"/acks="+strconv.Itoa(c.acks), func(t *testing.T) {
			mode := c.mode
			s := redistest.StartSentinels(t, 2, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			opts := modeOptions(mode, lock.WithTTL(2*time.Second))
			if c.acks > 0 {
				opts = append(opts, lock.WithReplicaAck(c.acks, time.Second))
			}
			var lockers []*lock.Locker
			for range 2 {
				l, err := lock.Open(ctx, s.URL(), opts...)
				require.NoError(t, err)
				defer l.Close()
				lockers = append(lockers, l)
			}
			var (
				holding  atomic.Bool
				overlaps atomic.Int64
				mu       sync.Mutex
				tokens   []uint64    // guarded by mu: in the order of holding
				times    []time.Time // guarded by mu: when each was granted
				after    atomic.Int64
				failed   atomic.Bool
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for _, l := range lockers {
				for range 2 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							callCtx, callCancel := context.WithTimeout(ctx, 20*time.Second)
							ls, err := l.Lock(callCtx, "k")
							if err != nil {
								callCancel()
								if errors.Is(err, lock.ErrNotAcquired) || ctx.Err() == nil {
									continue // a failover under way: try again
								}
								return
							}
							if !holding.CompareAndSwap(false, true) {
								overlaps.Add(1)
							}
							mu.Lock()
							tokens = append(tokens, ls.Token())
							times = append(times, time.Now())
							mu.Unlock()
							if failed.Load() {
								after.Add(1)
							}
							time.Sleep(time.Millisecond)
							holding.Store(false)
							_ = ls.Unlock(callCtx) // an uncertain release leaves the lock to its TTL
							callCancel()
						}
					})
				}
			}
			redistest.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(tokens) >= 20 },
				30*time.Second, 10*time.Millisecond, "no contention before the failover")
			s.Failover(t, 30*time.Second)
			failed.Store(true)
			redistest.Eventually(t, func() bool { return after.Load() >= 20 },
				45*time.Second, 10*time.Millisecond, "no progress after the failover")
			close(stop)
			wg.Wait()
			if c.acks > 0 {
				require.Zero(t, overlaps.Load(), "two holders at once")
			}
			mu.Lock()
			defer mu.Unlock()
			var gap time.Duration
			for i := 1; i < len(tokens); i++ {
				require.Greater(t, tokens[i], tokens[i-1], "token %d of %d", i, len(tokens))
				gap = max(gap, times[i].Sub(times[i-1]))
			}
			t.Logf("%s, %d acks: %d acquisitions; the longest time between two, the failover's cost: %v", mode, c.acks, len(tokens), gap.Round(time.Millisecond))
		})
	}
}

// A primary that dies is found down by the sentinels, which promote a
// replica; Locks wait, within their context, while the sentinels name the
// dead one, and succeed on the new one. The test reports how long after
// the kill the first did.
func TestALockerThroughSentinelsOutlivesAPrimaryThatDied(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			s := redistest.StartSentinels(t, 2, 3)
			ctx := context.Background()
			// One replica's acknowledgement: with both, no Lock succeeds
			// until the dead node is back as a replica. One does not
			// make every lock survive (the sentinels may promote the
			// replica that had not acknowledged it), and the test does
			// not count overlaps. A lock held at the kill and not
			// released blocks the next Lock for its TTL: a short one,
			// so that the figure is the failover's.
			l, err := lock.Open(ctx, s.URL(), modeOptions(mode, lock.WithReplicaAck(1, time.Second), lock.WithTTL(2*time.Second))...)
			require.NoError(t, err)
			defer l.Close()

			var (
				mu     sync.Mutex
				last   uint64    // guarded by mu: the last token held
				killed time.Time // guarded by mu: when the primary was killed
				first  time.Time // guarded by mu: the first acquisition after it
			)
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				for {
					select {
					case <-stop:
						done <- nil
						return
					default:
					}
					callCtx, cancel := context.WithTimeout(ctx, time.Second)
					started := time.Now()
					ls, err := l.Lock(callCtx, "k")
					if err == nil {
						mu.Lock()
						if ls.Token() <= last {
							mu.Unlock()
							cancel()
							done <- errors.New("a token no greater than the last")
							return
						}
						last = ls.Token()
						if !killed.IsZero() && started.After(killed) && first.IsZero() {
							first = time.Now()
						}
						mu.Unlock()
						_ = ls.Unlock(callCtx)
					}
					cancel()
				}
			}()
			redistest.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return last != 0 },
				10*time.Second, time.Millisecond, "no lock before the kill")
			old := s.KillPrimary(t)
			mu.Lock()
			killed = time.Now()
			mu.Unlock()
			s.WaitFailover(t, old, 30*time.Second)
			redistest.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return !first.IsZero() },
				30*time.Second, 5*time.Millisecond, "no lock on the new primary")
			close(stop)
			require.NoError(t, <-done)
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s: the first Lock after the primary was killed returned %v after the kill", mode, first.Sub(killed).Round(time.Millisecond))
		})
	}
}

// A lease whose lock did not reach the replica promoted is lost, and
// says so: its Unlock on the new primary is ErrNotHeld, never a silent
// success; a lease that asked for Done is told once its Subscriber has
// reached the new primary (ErrVanished); and a watched lease's Done
// closes when the watchdog's extension finds the lock gone, if not
// before.
func TestALeaseWhoseLockDidNotSurviveAFailoverSaysSo(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			s := redistest.StartSentinels(t, 2, 3)
			ctx := context.Background()
			plain, err := lock.Open(ctx, s.URL(), modeOptions(mode, lock.WithTTL(time.Minute))...)
			require.NoError(t, err)
			defer plain.Close()
			watched, err := lock.Open(ctx, s.URL(), modeOptions(mode, lock.WithTTL(3*time.Second), lock.WithAutoExtend())...)
			require.NoError(t, err)
			defer watched.Close()

			old := s.Primary(t)
			// The replicas leave the primary for a node that is not
			// there, so that neither lock reaches them; the sentinels
			// promote one of them all the same.
			for _, n := range s.Nodes {
				if n != old.Server {
					(&redistest.Server{Server: n}).Do(t, "REPLICAOF", "127.0.0.1", "1")
				}
			}
			unlocked := mustLock(t, plain, "plain")
			lost := mustLock(t, watched, "watched")
			told := mustLock(t, plain, "told")
			toldCtx := told.Context(ctx)
			awaitTracked(t, old)
			s.KillPrimary(t)
			promoted := s.WaitFailover(t, old, 30*time.Second)
			// The lease that asked is told once the Subscriber has found
			// the new primary, and read the lock there.
			t.Logf("the told lease ended %v after the failover was seen", awaitEnd(t, toldCtx, time.Now()))
			require.ErrorIs(t, context.Cause(toldCtx), lock.ErrVanished)
			for _, key := range []string{"plain", "watched", "told"} {
				require.Zero(t, promoted.Do(t, "EXISTS", "baton:{"+key+"}").Int, "the lock %s reached a replica", key)
			}

			unlockCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			require.ErrorIs(t, unlocked.Unlock(unlockCtx), lock.ErrNotHeld)
			select {
			case <-lost.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the watched lease's Done never closed")
			}
			require.ErrorIs(t, lost.Unlock(unlockCtx), lock.ErrNotHeld)
		})
	}
}

// Keyspace events, which fast mode's waiters hear releases by, are a
// node's own setting: CONFIG SET is not replicated, so the replica a
// failover promotes has none. Open's rules for CONFIG follow the
// primary: the subscriber turns them on there when it reconnects to it.
func TestKeyspaceEventsAreTurnedOnOnThePromotedReplica(t *testing.T) {
	s := redistest.StartSentinels(t, 2, 3)
	ctx := context.Background()
	l, err := lock.Open(ctx, s.URL(), lock.WithTTL(time.Minute))
	require.NoError(t, err)
	defer l.Close()
	events := func(n *redistest.Server) string {
		v := n.Do(t, "CONFIG", "GET", "notify-keyspace-events")
		require.Len(t, v.Elems, 2, "CONFIG GET's reply")
		return v.Elems[1].Str
	}
	turnedOn := func(n *redistest.Server) bool {
		flags := events(n)
		for _, f := range "Kgxe" {
			if !strings.ContainsRune(flags, f) {
				return false
			}
		}
		return true
	}
	require.True(t, turnedOn(s.Primary(t)), "Open turned them on on the primary")
	for _, n := range s.Nodes {
		if n != s.Primary(t).Server {
			require.Empty(t, events(&redistest.Server{Server: n}), "a replica has none of its own")
		}
	}

	promoted := s.Failover(t, 30*time.Second)
	redistest.Eventually(t, func() bool { return turnedOn(promoted) }, 20*time.Second, 10*time.Millisecond,
		"keyspace events were not turned on on the promoted replica")

	// And a waiter of another Locker, which hears of the release through
	// the new primary's pub/sub, gets the lock then, not at the holder's
	// TTL.
	other, err := lock.Open(ctx, s.URL(), lock.WithTTL(time.Minute))
	require.NoError(t, err)
	defer other.Close()
	held := mustLock(t, l, "k")
	got := make(chan error, 1)
	go func() {
		waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		ls, err := other.Lock(waitCtx, "k")
		if err == nil {
			err = ls.Unlock(waitCtx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter waits
	require.NoError(t, held.Unlock(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not get the released lock within 20s")
	}
}
