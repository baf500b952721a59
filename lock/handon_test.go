package lock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// requestsOf is how many fast-mode requests stand for key.
func requestsOf(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	return srv.Do(t, "LLEN", "baton:{"+key+"}:wanted").Int
}

// queueFastWaiters starts a Lock of key on each locker, one at a time, each
// once the one before has asked, and records the order in which they
// acquire. Each holds the lock for hold.
func queueFastWaiters(t *testing.T, srv *redistest.Server, key string, hold time.Duration, names []string, lockers []*lock.Locker) (order func() []string, wait func()) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	t.Cleanup(wg.Wait)
	for i, l := range lockers {
		name := names[i]
		wg.Go(func() {
			holdWhile(t, l, key, func(*lock.Lease) bool {
				mu.Lock()
				got = append(got, name)
				mu.Unlock()
				time.Sleep(hold)
				return true
			})
		})
		redistest.Eventually(t, func() bool { return requestsOf(t, srv, key) == int64(i+1) }, 5*time.Second, time.Millisecond)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}, wg.Wait
}

// In fast mode, a release hands the lock to the waiters in the order they
// asked, and wakes only the one it hands it to: from the first release
// on, every acquire script that runs succeeds.
func TestFastReleasesHandOnInTheOrderWaitersAsked(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	held := mustLock(t, holder, "k")
	lockers := []*lock.Locker{open(t, srv), open(t, srv), open(t, srv)}
	order, wait := queueFastWaiters(t, srv, "k", 5*time.Millisecond, []string{"first", "second", "third"}, lockers)

	scripts := callsOf(t, srv, "evalsha")
	mustUnlock(t, held)
	wait()
	require.Equal(t, []string{"first", "second", "third"}, order())
	// Four releases, and no attempt: each waiter holds its lease from
	// its hand-off's message, with no confirmation.
	require.Equal(t, int64(4), callsOf(t, srv, "evalsha")-scripts)
	require.Zero(t, requestsOf(t, srv, "k"))
}

// A holder that locks again right after its release asks behind the
// waiters that asked before it.
func TestFastReleaserAsksBehindTheWaiters(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	held := mustLock(t, holder, "k")
	lockers := []*lock.Locker{open(t, srv), open(t, srv)}
	order, wait := queueFastWaiters(t, srv, "k", 20*time.Millisecond, []string{"first", "second"}, lockers)

	mustUnlock(t, held)
	again := mustLock(t, holder, "k")
	require.Equal(t, []string{"first", "second"}, order())
	mustUnlock(t, again)
	wait()
}

// lineUp starts two waiters for key behind the holder of srv's lock, each
// once the one before has asked: a quitter, which gives up when cancel is
// called and reports its error on quit, and a stayer, which reports its
// lease and when it got it on stayed.
func lineUp(t *testing.T, srv *redistest.Server, key string) (cancel context.CancelFunc, quit <-chan error, stayed <-chan acquired) {
	t.Helper()
	quitter := open(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := quitter.Lock(ctx, key)
		errs <- err
	}()
	redistest.Eventually(t, func() bool { return requestsOf(t, srv, key) == 1 }, 5*time.Second, time.Millisecond)
	stayer := open(t, srv)
	got := make(chan acquired, 1)
	go func() {
		ls, err := stayer.Lock(context.Background(), key)
		assert.NoError(t, err)
		got <- acquired{ls, time.Now()}
	}()
	redistest.Eventually(t, func() bool { return requestsOf(t, srv, key) == 2 }, 5*time.Second, time.Millisecond)
	return cancel, errs, got
}

type acquired struct {
	ls *lock.Lease
	at time.Time
}

// A waiter that gives up takes its request back, and leaves the one
// behind it first in line.
func TestFastCancelledWaiterLeavesTheLine(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	held := mustLock(t, holder, "k")
	cancel, quit, stayed := lineUp(t, srv, "k")
	cancel()
	require.ErrorIs(t, <-quit, context.Canceled)
	redistest.Eventually(t, func() bool { return requestsOf(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
	first := srv.Do(t, "LINDEX", "baton:{k}:wanted", "0").Str

	mustUnlock(t, held)
	info := mustInspect(t, holder, "k")
	require.Equal(t, first[:8], info.Holder, "handed to the stayer's request")
	got := <-stayed
	require.NotNil(t, got.ls)
	mustUnlock(t, got.ls)
}

// An earlier version of baton kept one request, a string, where fast mode
// now keeps a list. A lock whose key still holds one works: the string is
// dropped, and Inspect reads it as no request.
func TestFastToleratesAnEarlierVersionsRequest(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	held := mustLock(t, holder, "k")
	srv.Do(t, "SET", "baton:{k}:wanted", "EARLIERVERSIONOWNERXXXXXXX 7 baton:wake:gone", "PX", "10000")
	require.False(t, mustInspect(t, holder, "k").Wanted)

	order, wait := queueFastWaiters(t, srv, "k", 0, []string{"waiter"}, []*lock.Locker{open(t, srv)})
	require.Equal(t, "list", srv.Do(t, "TYPE", "baton:{k}:wanted").Str)
	mustUnlock(t, held)
	wait()
	require.Equal(t, []string{"waiter"}, order())

	// A release that finds one hands nothing on, and frees the lock.
	again := mustLock(t, holder, "k")
	srv.Do(t, "SET", "baton:{k}:wanted", "EARLIERVERSIONOWNERXXXXXXX 7 baton:wake:gone", "PX", "10000")
	mustUnlock(t, again)
	require.False(t, mustInspect(t, holder, "k").Held)
}

// A lock handed to a waiter that never takes it (alive, but stalled: its
// process still hears the hand-off) is free again when the TTL that the
// releaser set runs out, as a stalled holder's is, and the waiter behind
// it gets it within a hand-off window after that, although it asked with
// a minute's TTL.
func TestFastWaiterBehindAStalledHandOffGetsTheLock(t *testing.T) {
	srv := redistest.Start(t)
	const releasersTTL = time.Second
	holder := open(t, srv, lock.WithTTL(releasersTTL))
	held := mustLock(t, holder, "k")

	stalled := redistest.DialRaw(t, srv.Addr)
	stalled.RoundTrip(t, resp.AppendCommand(nil, "SUBSCRIBE", "stalled-process"), 1)
	srv.Do(t, "RPUSH", "baton:{k}:wanted", "STALLEDOWNERXXXXXXXXXXXXXX 1 stalled-process")

	behind := open(t, srv, lock.WithTTL(time.Minute))
	got := make(chan time.Time, 1)
	go func() {
		ls, err := behind.Lock(context.Background(), "k")
		if assert.NoError(t, err) {
			got <- time.Now()
			assert.NoError(t, ls.Unlock(context.Background()))
		}
	}()
	redistest.Eventually(t, func() bool { return requestsOf(t, srv, "k") == 2 }, 5*time.Second, time.Millisecond)
	released := time.Now()
	mustUnlock(t, held)
	require.Equal(t, "STALLEDOWNERXXXXXXXXXXXXXX", srv.Do(t, "GET", "baton:{k}").Str, "handed to the stalled waiter first")
	select {
	case at := <-got:
		took := at.Sub(released)
		t.Logf("the waiter behind got the lock %v after the release", took)
		require.Greater(t, took, releasersTTL-100*time.Millisecond, "not before the releaser's TTL ran out")
		require.Less(t, took, releasersTTL+time.Second, "within a window of it")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter behind never got the lock")
	}
}

// Under contention the waiters wait on their requests, not on the key's
// release events: no process subscribes to the lock's keyspace channel,
// so the events of every SET of it reach nobody.
func TestFastWaitersUnderContentionHearNoKeyspaceEvents(t *testing.T) {
	srv := redistest.Start(t)
	lockers := []*lock.Locker{open(t, srv), open(t, srv), open(t, srv), open(t, srv)}
	subscribes := callsOf(t, srv, "subscribe")
	var wg sync.WaitGroup
	for _, l := range lockers {
		wg.Go(func() {
			for range 100 {
				ls := mustLock(t, l, "k")
				srv.Do(t, "INCR", "n")
				mustUnlock(t, ls)
			}
		})
	}
	wg.Wait()
	require.Equal(t, "400", srv.Do(t, "GET", "n").Str)
	require.Zero(t, callsOf(t, srv, "subscribe")-subscribes, "no keyspace subscription")
}

// A waiter that gives up after the lock was handed to it hands it on, as
// a release does: the waiter behind it, which waits for its hand-off and
// not for the key's events, gets it at once.
func TestFastWaiterThatGivesUpHandsOnALockHandedToIt(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	held := mustLock(t, holder, "k")
	cancel, quit, stayed := lineUp(t, srv, "k")

	// Hand the lock to the quitter, as a release would, and let it go
	// before it confirms.
	quitterOwner := strings.Fields(srv.Do(t, "LPOP", "baton:{k}:wanted").Str)[0]
	srv.Do(t, "SET", "baton:{k}", quitterOwner, "PX", "10000")
	gaveUp := time.Now()
	cancel()
	require.ErrorIs(t, <-quit, context.Canceled)
	select {
	case got := <-stayed:
		require.NotNil(t, got.ls)
		t.Logf("the waiter behind got the lock %v after the other gave up", got.at.Sub(gaveUp))
		require.Less(t, got.at.Sub(gaveUp), 250*time.Millisecond, "handed on, not found at a look after the hand-off window")
		mustUnlock(t, got.ls)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter behind never got the lock")
	}
	require.ErrorIs(t, held.Unlock(context.Background()), lock.ErrNotHeld)
}
