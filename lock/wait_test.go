package lock_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/subscriber"
)

func TestWaiterGetsTheLockWhenTheHolderNeverReleases(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	holder, waiter := open(t, srv, lock.WithTTL(ttl)), open(t, srv)
	start := time.Now()
	_ = mustLock(t, holder, "k") // never released
	ls := mustLock(t, waiter, "k")
	waited := time.Since(start)
	t.Logf("acquired %v after the holder's acquire (TTL %v)", waited, ttl)
	require.Less(t, waited, ttl+50*time.Millisecond)
	mustUnlock(t, ls)
}

func TestCancelledWaitLeavesNoWaiterBehind(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv, lock.WithTTL(time.Minute)), open(t, srv)
	held := mustLock(t, holder, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := waiter.Lock(ctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	redistest.Eventually(t, func() bool {
		return srv.Do(t, "PUBSUB", "NUMSUB", "__keyspace@0__:baton:{k}").Elems[1].Int == 0
	}, 5*time.Second, time.Millisecond, "the subscription outlived its only waiter")
	mustUnlock(t, held)
	// The waiter's Locker is still fine.
	mustUnlock(t, mustLock(t, waiter, "k"))
}

func TestCancelledUnlockStillReleases(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(time.Minute))
	for _, when := range []string{"before", "during"} {
		t.Run(when, func(t *testing.T) {
			ls := mustLock(t, l, "k")
			ctx, cancel := context.WithCancel(context.Background())
			if when == "before" {
				cancel()
			} else {
				time.AfterFunc(20*time.Microsecond, cancel)
			}
			err := ls.Unlock(ctx)
			if err != nil {
				require.ErrorIs(t, err, context.Canceled)
			}
			redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 },
				5*time.Second, time.Millisecond, "a cancelled release left the lock held")
			cancel()
		})
	}
}

// A release that a cancelled Unlock left to the background is not cut
// short by a Close that follows: the lease has ended, so Close does not
// release it itself.
func TestCloseLetsACancelledUnlocksReleaseFinish(t *testing.T) {
	srv := redistest.Start(t)
	for i := range 20 {
		l, err := lock.Open(context.Background(), srv.Addr, lock.WithTTL(time.Minute))
		require.NoError(t, err)
		key := "k" + strconv.Itoa(i)
		ls := mustLock(t, l, key)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, ls.Unlock(ctx), context.Canceled)
		require.NoError(t, l.Close())
		require.Zero(t, srv.Do(t, "EXISTS", "baton:{"+key+"}").Int, "Close cut short the release of attempt %d", i)
	}
}

func TestEveryReleaseIsOneWriteOfPingThenEvalsha(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var writes [][]byte
	tap := func(dir conn.Direction, p []byte) {
		if dir == conn.Write {
			mu.Lock()
			writes = append(writes, append([]byte(nil), p...))
			mu.Unlock()
		}
	}
	l := open(t, srv, lock.WithConnOptions(conn.WithTap(tap)))
	other := open(t, srv)
	var wg sync.WaitGroup
	for _, locker := range []*lock.Locker{l, l, other} {
		wg.Go(func() {
			for range 20 {
				if !holdWhile(t, locker, "k", nil) {
					return
				}
			}
		})
	}
	wg.Wait()

	// A release is EVALSHA with the release script's digest.
	sum := sha1.Sum([]byte(lock.ReleaseScriptSource))
	release := []byte("$7\r\nEVALSHA\r\n$40\r\n" + hex.EncodeToString(sum[:]))
	pair := []byte("*1\r\n$4\r\nPING\r\n*10\r\n" + string(release))
	releases := 0
	mu.Lock()
	defer mu.Unlock()
	for _, w := range writes {
		n := bytes.Count(w, release)
		require.Equal(t, n, bytes.Count(w, pair), "a release without its PING in the same write: %q", w)
		releases += n
	}
	require.Equal(t, 40, releases)
}

func TestWaitersSurviveTheLossOfTheSubscriber(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = time.Second
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	holder := open(t, srv, lock.WithTTL(time.Minute))
	waiters := open(t, srv, lock.WithTTL(ttl),
		lock.WithConnOptions(conn.WithRedialBackoff(time.Millisecond, 10*time.Millisecond)))
	held := mustLock(t, holder, "k")

	acquired := make(chan time.Time, 3)
	for range 3 {
		wg.Go(func() {
			holdWhile(t, waiters, "k", func(*lock.Lease) bool {
				acquired <- time.Now()
				return true
			})
		})
	}
	redistest.Eventually(t, func() bool {
		return srv.Do(t, "PUBSUB", "NUMSUB", "__keyspace@0__:baton:{k}").Elems[1].Int == 1
	}, 5*time.Second, time.Millisecond)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	released := time.Now()
	mustUnlock(t, held)
	wg.Wait()
	close(acquired)
	for at := range acquired {
		// The slowest path is a waiter that missed every event and
		// retries when a holder's TTL runs out.
		require.Less(t, at.Sub(released), 3*ttl)
	}
}

// TestFastModeWhereConfigIsRefused: where CONFIG is refused, Open cannot
// check the keyspace events and says so; a Locker opened with the
// subscriber option WithKeyspaceEventsConfigured (internal, as the
// inspector uses it), or made with New on a subscriber told the events
// are configured, waits on them as usual.
func TestFastModeWhereConfigIsRefused(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`notify-keyspace-events "Kgxe"`, `rename-command CONFIG ""`))
	ctx := context.Background()
	_, err := lock.Open(ctx, srv.Addr)
	require.ErrorContains(t, err, "WithKeyspaceEventsConfigured")

	for name, newLocker := range map[string]func() *lock.Locker{
		"Open": func() *lock.Locker {
			l, err := lock.Open(ctx, srv.Addr, lock.WithKeyspaceEventsConfigured(), lock.WithTTL(time.Minute))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		"New": func() *lock.Locker {
			c, err := conn.NewClient(srv.Addr)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			s, err := subscriber.New(ctx, srv.Addr, subscriber.WithKeyspaceEventsConfigured())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			l, err := lock.New(c, s, lock.WithTTL(time.Minute))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
	} {
		t.Run(name, func(t *testing.T) {
			holder, waiter := newLocker(), newLocker()
			held := mustLock(t, holder, "k")
			got := make(chan *lock.Lease, 1)
			go func() {
				ls, err := waiter.Lock(ctx, "k")
				if err == nil {
					got <- ls
				}
				close(got)
			}()
			time.Sleep(50 * time.Millisecond) // the waiter waits on the lock's events
			mustUnlock(t, held)
			select {
			case ls := <-got:
				require.NotNil(t, ls, "the waiter's Lock failed")
				mustUnlock(t, ls)
			case <-time.After(10 * time.Second): // far below the minute's TTL: a release event woke it
				t.Fatal("the waiter was not woken by the release")
			}
		})
	}
}
