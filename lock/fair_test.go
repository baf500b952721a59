package lock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

func queueLen(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	return srv.Do(t, "ZCARD", "baton:{"+key+"}:queue").Int
}

func TestFairWaitersAcquireInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	lockers := []*lock.Locker{
		open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair()),
		open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair()),
	}
	requireArrivalOrder(t, lockers, func(args ...string) int64 { return srv.Do(t, args...).Int })
}

// requireArrivalOrder queues 20 waiters for the lock "line", one at a time
// from Lockers picked at random, behind a holder, and requires that they
// acquire it in the order they queued and leave it free. do runs a command
// on the server that holds the lock.
func requireArrivalOrder(t *testing.T, lockers []*lock.Locker, do func(args ...string) int64) {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	held := mustLock(t, lockers[0], "line")

	var mu sync.Mutex
	var order []int
	for i := range 20 {
		l := lockers[rand.IntN(len(lockers))]
		wg.Go(func() {
			holdWhile(t, l, "line", func(*lock.Lease) bool {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return true
			})
		})
		// The next waiter arrives only once this one is queued.
		redistest.Eventually(t, func() bool { return do("ZCARD", "baton:{line}:queue") == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	mustUnlock(t, held)
	wg.Wait()
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, order)
	require.Zero(t, do("EXISTS", "baton:{line}"))
}

func TestFairLockersExcludeEachOtherAndFenceInOrder(t *testing.T) {
	srv := redistest.Start(t)
	lockers := []*lock.Locker{open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())}
	counter, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	defer counter.Close()
	var taken atomic.Int64
	var last uint64
	var wg sync.WaitGroup
	for _, l := range lockers {
		for range 16 {
			wg.Go(func() {
				for taken.Add(1) <= 2000 {
					if !holdWhile(t, l, "counter", func(ls *lock.Lease) bool {
						ok := assert.Greater(t, ls.Token(), last)
						last = ls.Token()
						return assert.NoError(t, addOne(counter, "count")) && ok
					}) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	require.Equal(t, "2000", srv.Do(t, "GET", "count").Str)
	require.Zero(t, queueLen(t, srv, "counter"))
}

func TestFairReleaserWaitsItsTurn(t *testing.T) {
	srv := redistest.Start(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	a, b := open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())
	held := mustLock(t, a, "k")
	got := make(chan struct{})
	wg.Go(func() {
		holdWhile(t, b, "k", func(*lock.Lease) bool {
			close(got)
			time.Sleep(20 * time.Millisecond)
			return true
		})
	})
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
	mustUnlock(t, held)
	// The releaser asks again at once and must not get ahead of b.
	again := mustLock(t, a, "k")
	select {
	case <-got:
	default:
		t.Fatal("the releaser took the lock back")
	}
	mustUnlock(t, again)
	wg.Wait()
}

func TestFairTryLockDoesNotJumpTheQueue(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())
	ctx := context.Background()
	held := mustLock(t, a, "k")
	_, err := b.TryLock(ctx, "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.Zero(t, queueLen(t, srv, "k"), "TryLock does not queue")
	mustUnlock(t, held)
	ls, err := b.TryLock(ctx, "k")
	require.NoError(t, err)
	mustUnlock(t, ls)
}

func TestFairCancelledWaiterLeavesTheQueue(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())
	held := mustLock(t, a, "k")
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := b.Lock(ctx, "k")
		errs <- err
	}()
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errs, context.Canceled)
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 0 }, 5*time.Second, time.Millisecond)
	require.Zero(t, srv.Do(t, "HLEN", "baton:{k}:waiters").Int)
	mustUnlock(t, held)
}

// TestFairCancelsRacingHandOffsPassTheLockOn cancels waiters at random
// moments, many just as the lock is handed to them; a hand-off to a waiter
// that gave up must be passed on, not held until its TTL.
func TestFairCancelsRacingHandOffsPassTheLockOn(t *testing.T) {
	srv := redistest.Start(t)
	lockers := []*lock.Locker{
		open(t, srv, lock.WithFair(), lock.WithTTL(time.Minute)),
		open(t, srv, lock.WithFair(), lock.WithTTL(time.Minute)),
	}
	var acquired, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range 10 {
		l := lockers[g%2]
		wg.Go(func() {
			for range 50 {
				ctx, cancel := context.WithCancel(context.Background())
				timer := time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, cancel)
				ls, err := l.Lock(ctx, "k")
				timer.Stop()
				cancel()
				if err != nil {
					if !assert.ErrorIs(t, err, context.Canceled) {
						return
					}
					cancelled.Add(1)
					continue
				}
				acquired.Add(1)
				if !assert.NoError(t, ls.Unlock(context.Background())) {
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d acquired, %d cancelled", acquired.Load(), cancelled.Load())
	require.Equal(t, int64(500), acquired.Load()+cancelled.Load())
	require.Positive(t, cancelled.Load())
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond,
		"the lock is held after every waiter left")
	require.Zero(t, queueLen(t, srv, "k"))
	ls := mustLock(t, lockers[0], "k")
	mustUnlock(t, ls)
}

// TestAFreeLockWithWaitersQueuedGoesToThemFirst: a lock whose holder's
// TTL ran out while a waiter was queued is free with the queue not empty
// until someone acquires. A claim that never queued, which takes a free
// lock at once, must still leave it to the waiter: its attempt offers the
// lock to the head of the queue, and fails.
func TestAFreeLockWithWaitersQueuedGoesToThemFirst(t *testing.T) {
	srv := redistest.Start(t)
	a, b, c := open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := mustLock(t, a, "k")
	got := make(chan *lock.Lease, 1)
	go func() {
		ls, err := b.Lock(ctx, "k")
		assert.NoError(t, err)
		got <- ls
	}()
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
	srv.Do(t, "DEL", "baton:{k}") // a's TTL ran out

	_, err := c.TryLock(ctx, "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired, "the queue comes first")
	select {
	case ls := <-got:
		require.NotNil(t, ls)
		mustUnlock(t, ls)
	case <-ctx.Done():
		t.Fatal("the queued waiter was not handed the lock")
	}
	require.ErrorIs(t, held.Unlock(ctx), lock.ErrNotHeld)
}

// TestAFairAcquireThatRaisesAfterTakingTheLockLetsItGo: Redis keeps a
// script's writes up to an error. A queued claim that takes a free lock
// then takes itself out of the queue; with the waiters' hash garbled (a
// key of another type) that raises after the lock's SET, and the Lock
// fails. The lock must not stay held, for its TTL, by a call that
// returned an error: the claim releases it in the background.
func TestAFairAcquireThatRaisesAfterTakingTheLockLetsItGo(t *testing.T) {
	srv := redistest.Start(t)
	opts := []lock.Option{lock.WithFair(), lock.WithQueueLease(300 * time.Millisecond)}
	a, b := open(t, srv, opts...), open(t, srv, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held := mustLock(t, a, "k")
	errs := make(chan error, 1)
	go func() {
		ls, err := b.Lock(ctx, "k")
		if err == nil {
			_ = ls.Unlock(ctx)
		}
		errs <- err
	}()
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
	srv.Do(t, "SET", "baton:{k}:waiters", "garbage")
	mustUnlock(t, held) // its offer to b fails on the hash, and it deletes the lock

	// b's next renewal finds the lock free, takes it, and raises on the
	// hash while taking itself out of the queue.
	require.ErrorIs(t, <-errs, resp.WrongType)
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 2*time.Second, time.Millisecond)
}
