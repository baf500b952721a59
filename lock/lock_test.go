package lock_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

func TestLockersExcludeEachOther(t *testing.T) {
	srv := redistest.Start(t)
	lockers := []*lock.Locker{open(t, srv), open(t, srv)}
	counter, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	defer counter.Close()

	const goroutines, increments = 16, 2000
	var taken atomic.Int64
	var wg sync.WaitGroup
	for _, l := range lockers {
		for range goroutines {
			wg.Go(func() {
				for taken.Add(1) <= increments {
					if !holdWhile(t, l, "counter", func(*lock.Lease) bool {
						return assert.NoError(t, addOne(counter, "count"))
					}) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	require.Equal(t, "2000", srv.Do(t, "GET", "count").Str)
}

func TestFencingTokensIncreaseAcrossLockers(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	var last uint64
	held := 0
	var wg sync.WaitGroup
	for _, l := range []*lock.Locker{a, b, a, b} {
		wg.Go(func() {
			for range 50 {
				if !holdWhile(t, l, "fenced", func(ls *lock.Lease) bool {
					// Under the lock, the tokens seen form the order of holding.
					ok := assert.Greater(t, ls.Token(), last)
					last = ls.Token()
					held++
					return ok
				}) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 200, held)
	require.Equal(t, strconv.FormatUint(last, 10), srv.Do(t, "GET", "baton:{fenced}:fence").Str, "the counter holds the last token")
}

func TestTryLockAndNotAcquired(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv), open(t, srv)
	ctx := context.Background()
	held, err := a.TryLock(ctx, "k")
	require.NoError(t, err)
	_, err = b.TryLock(ctx, "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	mustUnlock(t, held)
	again, err := b.TryLock(ctx, "k")
	require.NoError(t, err)
	require.Greater(t, again.Token(), held.Token())
	mustUnlock(t, again)
}

func TestKeysShareAHashTag(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithKeyPrefix("app:"))
	ls := mustLock(t, l, "orders:42")
	keys := srv.Do(t, "KEYS", "*")
	var names []string
	for _, k := range keys.Elems {
		names = append(names, k.Str)
	}
	require.ElementsMatch(t, []string{"app:{orders:42}", "app:{orders:42}:fence"}, names)
	mustUnlock(t, ls)
}

func TestBadInputChangesNothing(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"empty key": func() error { _, err := l.Lock(ctx, ""); return err },
		"long key":  func() error { _, err := l.TryLock(ctx, strings.Repeat("k", 1025)); return err },
		//nolint:staticcheck // a nil context is the bad input under test
		"nil context": func() error { _, err := l.Lock(nil, "k"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), lock.ErrInvalid)
		})
	}
	_, err := lock.Open(ctx, srv.Addr, lock.WithTTL(0))
	require.ErrorIs(t, err, lock.ErrInvalid)
	_, err = lock.Open(ctx, srv.Addr, lock.WithTTL(-time.Second))
	require.ErrorIs(t, err, lock.ErrInvalid)

	ls := mustLock(t, l, "k")
	require.ErrorIs(t, ls.Extend(ctx, 0), lock.ErrInvalid)
	require.ErrorIs(t, ls.Unlock(nil), lock.ErrInvalid) //nolint:staticcheck // as above
	mustUnlock(t, ls)
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{}", "baton:{k}").Int)
	require.Equal(t, int64(1), srv.Do(t, "DBSIZE").Int, "only the fence counter of k")
}

func TestExtendAndLoss(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, lock.WithTTL(100*time.Millisecond))
	b := open(t, srv)
	ctx := context.Background()
	ls := mustLock(t, a, "k")
	require.NoError(t, ls.Extend(ctx, time.Minute))
	require.Greater(t, srv.Do(t, "PTTL", "baton:{k}").Int, int64(50_000))

	require.NoError(t, ls.Extend(ctx, 50*time.Millisecond))
	other := mustLock(t, b, "k") // waits out the 50ms
	require.ErrorIs(t, ls.Extend(ctx, time.Minute), lock.ErrNotHeld)
	select {
	case <-ls.Done():
	default:
		t.Fatal("Done open after the lease was lost")
	}
	require.ErrorIs(t, ls.Unlock(ctx), lock.ErrNotHeld)
	require.NoError(t, other.Extend(ctx, time.Minute), "the loser's calls left the winner alone")
	mustUnlock(t, other)
}

func TestUnlockAfterExpiryDoesNotTouchTheNextOwner(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, lock.WithTTL(30*time.Millisecond))
	b := open(t, srv)
	first := mustLock(t, a, "k")
	second := mustLock(t, b, "k")
	require.ErrorIs(t, first.Unlock(context.Background()), lock.ErrNotHeld)
	require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{k}").Int)
	mustUnlock(t, second)
}

func TestDoneClosesWhenTheTTLRunsOutAndOnUnlock(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(50*time.Millisecond))
	ls := mustLock(t, l, "k")
	select {
	case <-ls.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the TTL")
	}
	ls = mustLock(t, l, "k2")
	done := ls.Done()
	mustUnlock(t, ls)
	<-done
}

func TestWatchdogKeepsTheLease(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, lock.WithTTL(500*time.Millisecond), lock.WithAutoExtend())
	b := open(t, srv)
	ls := mustLock(t, a, "k")
	time.Sleep(1500 * time.Millisecond) // three TTLs
	_, err := b.TryLock(context.Background(), "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	select {
	case <-ls.Done():
		t.Fatal("lease lost under the watchdog")
	default:
	}
	mustUnlock(t, ls)
	mustUnlock(t, mustLock(t, b, "k"))
}

func TestWatchdogNoticesLoss(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(150*time.Millisecond), lock.WithAutoExtend())
	ls := mustLock(t, l, "k")
	srv.Do(t, "SET", "baton:{k}", "someone else")
	select {
	case <-ls.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the lock was taken over")
	}
	require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
	require.Equal(t, "someone else", srv.Do(t, "GET", "baton:{k}").Str)
}

func TestCloseReleasesHeldLeases(t *testing.T) {
	srv := redistest.Start(t)
	l, err := lock.Open(context.Background(), srv.Addr, lock.WithTTL(time.Minute), lock.WithAutoExtend())
	require.NoError(t, err)
	ls := mustLock(t, l, "k")
	require.NoError(t, l.Close())
	<-ls.Done()
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int)
	_, err = l.Lock(context.Background(), "k")
	require.ErrorIs(t, err, lock.ErrClosed)
}

func TestScriptsAreReloadedAfterAFlush(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv)
	ls := mustLock(t, l, "k")
	srv.Do(t, "SCRIPT", "FLUSH")
	require.NoError(t, ls.Extend(context.Background(), time.Minute))
	srv.Do(t, "SCRIPT", "FLUSH")
	mustUnlock(t, ls)
	srv.Do(t, "SCRIPT", "FLUSH")
	mustUnlock(t, mustLock(t, l, "k"))
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int)
}
