package lock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// requireNothingHeld checks that no lock key of keys is left on srv, and
// no fair waiter queued for one.
func requireNothingHeld(t *testing.T, srv *redistest.Server, keys []string, format string, args ...any) {
	t.Helper()
	for _, key := range keys {
		why := fmt.Sprintf(format, args...)
		require.Zero(t, srv.Do(t, "EXISTS", "baton:{"+key+"}").Int, "%s: lock %q left held, PTTL %d, requests %v", why, key,
			srv.Do(t, "PTTL", "baton:{"+key+"}").Int, srv.Do(t, "LRANGE", "baton:{"+key+"}:wanted", "0", "-1").Elems)
		require.Zero(t, srv.Do(t, "ZCARD", "baton:{"+key+"}:queue").Int, "%s: a waiter left queued for %q", why, key)
	}
}

// A service's shutdown: it cancels the contexts of its work in flight,
// then closes the Locker. A Lock cancelled while its acquire was on its
// way may have taken the lock; the undo it sends in the background must
// complete before Close returns, not be cut short by it, or the lock
// stays held for its whole TTL with no owner.
func TestAShutdownLeavesNoLockHeld(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := modeOptions(mode, lock.WithTTL(30*time.Second))
			const rounds = 300
			errs := 0
			for round := range rounds {
				key := fmt.Sprintf("k%d", round)
				l, err := lock.Open(context.Background(), srv.Addr, opts...)
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				result := make(chan error, 1)
				go func() {
					_, err := l.Lock(ctx, key)
					result <- err
				}()
				time.Sleep(time.Duration(rand.Int64N(int64(300 * time.Microsecond))))
				cancel()
				// A service's handlers see the cancel and return before
				// it closes the Locker, some sooner than others.
				time.Sleep(time.Duration(rand.Int64N(int64(300 * time.Microsecond))))
				require.NoError(t, l.Close())
				if err := <-result; err != nil {
					errs++
				}
				requireNothingHeld(t, srv, []string{key}, "round %d", round)
			}
			t.Logf("%d of %d Locks ended with an error", errs, rounds)
		})
	}
}

// Many calls on one Locker while Close runs, with a second Locker waiting
// for one of the keys: once Close has returned, no key is held by the
// closed Locker's owners, and the waiter gets the lock.
func TestCloseInTheMiddleOfEverythingLeavesNothingHeld(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := modeOptions(mode, lock.WithTTL(30*time.Second))
			keys := []string{"a", "b", "c"}
			other := open(t, srv, opts...)
			for round := range 20 {
				l, err := lock.Open(context.Background(), srv.Addr, opts...)
				require.NoError(t, err)
				var wg sync.WaitGroup
				for g := range 16 {
					wg.Go(func() { churn(l, keys[g%len(keys)], g) })
				}
				waited := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					ls, err := other.Lock(ctx, "a")
					if err == nil {
						err = ls.Unlock(ctx)
					}
					waited <- err
				}()
				time.Sleep(time.Duration(rand.Int64N(int64(20 * time.Millisecond))))
				require.NoError(t, l.Close())
				wg.Wait()
				require.NoError(t, <-waited, "round %d: the waiter on another Locker", round)
				requireNothingHeld(t, srv, keys, "round %d", round)
			}
		})
	}
}

// churn locks, extends, unlocks twice and tries again on l until l is
// closed, each call under a context that may end at any moment.
func churn(l *lock.Locker, key string, seed int) {
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.Int64N(int64(5*time.Millisecond))))
		var ls *lock.Lease
		var err error
		if r.IntN(2) == 0 {
			ls, err = l.Lock(ctx, key)
		} else {
			ls, err = l.TryLock(ctx, key)
		}
		cancel()
		if errors.Is(err, lock.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		_ = ls.Extend(context.Background(), time.Duration(1+r.Int64N(int64(time.Minute))))
		ctx, cancel = context.WithTimeout(context.Background(), time.Duration(r.Int64N(int64(2*time.Millisecond))))
		_ = ls.Unlock(ctx)
		cancel()
		_ = ls.Unlock(context.Background())
	}
}

// An Unlock whose context ends while its client redials, after the
// connection broke under the release, still releases: in the background,
// within the release timeout, as Unlock's doc says of every release its
// context cut short. Before, the dial's own timeout error was taken for a
// verdict, and the lock stayed held for its TTL.
func TestAnUnlockCutShortWhileRedialingStillReleases(t *testing.T) {
	srv := redistest.Start(t)
	proxy, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	l, err := lock.Open(context.Background(), proxy.Addr(), lock.WithTTL(30*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	ls := mustLock(t, l, "k")
	proxy.Blackhole(true) // a new connection's handshake gets no reply
	proxy.Reset()         // the command connection breaks
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = ls.Unlock(ctx)
	t.Logf("Unlock: %v", err)
	require.ErrorAs(t, err, new(*conn.UncertainError))
	proxy.Blackhole(false)
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 10*time.Second, 10*time.Millisecond,
		"the lock is still held, PTTL %d", srv.Do(t, "PTTL", "baton:{k}").Int)
}
