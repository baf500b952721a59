package lock_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/subscriber"
)

// takeOver has other poll TryLock on key until it acquires, and checks
// that held's local deadline had passed by the time other's reply came:
// the moment other's lock was set lies before that reply, so a deadline
// after it is a second holder. It returns other's lease, and fails the
// test if other has not acquired within 10 s.
func takeOver(t *testing.T, held *lock.Lease, other *lock.Locker, key string) *lock.Lease {
	t.Helper()
	giveUp := time.Now().Add(10 * time.Second)
	for {
		ls, err := other.TryLock(context.Background(), key)
		if errors.Is(err, lock.ErrNotAcquired) {
			if time.Now().After(giveUp) {
				t.Fatalf("another owner did not take %q within 10 s: the lease still holds it", key)
			}
			continue
		}
		replied := time.Now()
		require.NoError(t, err)
		require.False(t, lock.Deadline(held).After(replied),
			"a second owner acquired %v before the first lease's deadline", lock.Deadline(held).Sub(replied))
		return ls
	}
}

func TestASubMillisecondTTLEndsTheLeaseBeforeTheLock(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 10*time.Millisecond + 900*time.Microsecond
	a := open(t, srv, lock.WithTTL(ttl))
	b := open(t, srv, lock.WithTTL(time.Minute))
	for range 200 {
		ls := mustLock(t, a, "k")
		require.LessOrEqual(t, srv.Do(t, "PTTL", "baton:{k}").Int, int64(11))
		mustUnlock(t, takeOver(t, ls, b, "k"))
	}
}

func TestFencingTokensIncreaseAcrossARestartAndALostCounter(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := modeOptions(mode)
			l := open(t, srv, opts...)
			var last uint64
			next := func(why string) {
				ls := mustLock(t, l, "k")
				require.Greater(t, ls.Token(), last, why)
				last = ls.Token()
				mustUnlock(t, ls)
			}
			next("first")
			next("second")
			srv.Restart(t) // no persistence: every key is gone
			next("after a restart without persistence")
			srv.Do(t, "DEL", "baton:{k}:fence")
			next("after the counter expired or was evicted")
			srv.Do(t, "SET", "baton:{k}:fence", "7")
			next("after a restart from an old snapshot")
			srv.Do(t, "SET", "baton:{k}:fence", "garbage")
			next("after the counter was garbled")

			// A counter past the clock (the server's clock set back, or
			// tokens handed out within one microsecond): one more than it.
			const ahead = 5_000_000_000_000_000 // microseconds: the year 2128
			srv.Do(t, "SET", "baton:{k}:fence", strconv.Itoa(ahead))
			next("after the clock went back")
			require.Equal(t, uint64(ahead+1), last)
			require.Equal(t, strconv.Itoa(ahead+1), srv.Do(t, "GET", "baton:{k}:fence").Str, "the token is stored")
			require.Positive(t, srv.Do(t, "PTTL", "baton:{k}:fence").Int, "with the retention")
			next("after the clock went back, again")
			require.Equal(t, uint64(ahead+2), last)

			// A counter of another type is garbled too: it is
			// overwritten, rather than fail the acquire after its SET of
			// the lock. The counter that was ahead of the clock is lost
			// with it, so the token is the clock's again.
			srv.Do(t, "DEL", "baton:{k}:fence")
			srv.Do(t, "RPUSH", "baton:{k}:fence", "x")
			last = 0
			next("after the counter became a list")
			require.Equal(t, strconv.FormatUint(last, 10), srv.Do(t, "GET", "baton:{k}:fence").Str)
		})
	}
}

// TestAFencingCounterNoTokenCouldBeReadsAsGarbled: a counter that holds
// something no token of baton's is (beyond an int64, not finite, negative,
// at or past 2^53 where Lua numbers stop holding integers exactly) reads
// as garbled: the token is the clock's and the lock is acquired. A counter
// of 1e20 used to make a token that Redis turned into a negative integer,
// which the fast acquire took for "held": TryLock failed with the lock set
// to its own owner for the TTL.
func TestAFencingCounterNoTokenCouldBeReadsAsGarbled(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			l := open(t, srv, modeOptions(mode)...)
			for _, counter := range []string{"1e20", "inf", "-inf", "nan", "-5", "9007199254740993"} {
				srv.Do(t, "SET", "baton:{k}:fence", counter)
				before := uint64(time.Now().Add(-time.Minute).UnixMicro())
				ls, err := l.TryLock(ctx, "k")
				require.NoError(t, err, counter)
				require.Greater(t, ls.Token(), before, "%s: the clock's token", counter)
				mustUnlock(t, ls)
			}
		})
	}
}

// TestAFairWaiterOnACounterOfAnotherTypeWaits: a fair attempt that does
// not acquire reports the last token, after it queued its caller; a
// counter of another type there used to fail the Lock after it had
// queued, with an error that said nothing of writes, and its queue entry
// stayed for the holder's release to offer the lock to. It reads as 0
// now: the waiter waits, and leaves the queue when its context ends.
func TestAFairWaiterOnACounterOfAnotherTypeWaits(t *testing.T) {
	srv := redistest.Start(t)
	a, b := open(t, srv, lock.WithFair()), open(t, srv, lock.WithFair())
	ctx := context.Background()
	held := mustLock(t, a, "k")
	srv.Do(t, "DEL", "baton:{k}:fence")
	srv.Do(t, "RPUSH", "baton:{k}:fence", "x")

	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err := b.Lock(wctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	redistest.Eventually(t, func() bool { return srv.Do(t, "ZCARD", "baton:{k}:queue").Int == 0 }, 5*time.Second, time.Millisecond)
	mustUnlock(t, held)
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the released lock is offered to no one")
}

func TestEveryKeyHasATTL(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := modeOptions(mode)
			holder, waiter := open(t, srv, opts...), open(t, srv, opts...)
			for i := range 100 {
				key := "session:" + strconv.Itoa(i)
				ls := mustLock(t, holder, key)
				// A waiter that asks (fast) or queues (fair), then gives up.
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				_, err := waiter.Lock(ctx, key)
				cancel()
				require.ErrorIs(t, err, context.DeadlineExceeded)
				mustUnlock(t, ls)
			}
			keys := srv.Do(t, "KEYS", "*")
			require.NotEmpty(t, keys.Elems)
			for _, k := range keys.Elems {
				require.Positive(t, srv.Do(t, "PTTL", k.Str).Int, "key %s has no TTL", k.Str)
			}
		})
	}
}

func TestOpenRefusesAServerThatMayEvictALock(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("maxmemory 100mb", "maxmemory-policy allkeys-lru"))
	ctx := context.Background()
	_, err := lock.Open(ctx, srv.Addr)
	require.ErrorIs(t, err, lock.ErrInvalid)
	require.ErrorContains(t, err, "maxmemory-policy")
	for _, policy := range []string{"volatile-lru", "volatile-ttl", "allkeys-random"} {
		srv.Do(t, "CONFIG", "SET", "maxmemory-policy", policy)
		_, err := lock.Open(ctx, srv.Addr)
		require.ErrorIs(t, err, lock.ErrInvalid, policy)
	}
	l, err := lock.Open(ctx, srv.Addr, lock.WithEvictionAllowed())
	require.NoError(t, err)
	require.NoError(t, l.Close())
	srv.Do(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	l, err = lock.Open(ctx, srv.Addr)
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

func TestKeysThatWouldSplitAcrossSlotsAreRefused(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv)
	for _, key := range []string{"}", "}x", "}s", "}{a}"} {
		_, err := l.TryLock(context.Background(), key)
		require.ErrorIs(t, err, lock.ErrInvalid, key)
	}
	_, err := lock.Open(context.Background(), srv.Addr, lock.WithKeyPrefix("app{}:"))
	require.ErrorIs(t, err, lock.ErrInvalid)
	require.Zero(t, srv.Do(t, "DBSIZE").Int, "a refused key sent nothing")
}

// stalledSubscriber delays the subscriber's reads while on is set, as a
// pub/sub connection that stalls would.
func stalledSubscriber(on *atomic.Bool, d time.Duration) lock.Option {
	return lock.WithSubscriberOptions(subscriber.WithConnOptions(conn.WithTap(func(dir conn.Direction, _ []byte) {
		if dir == conn.Read && on.Load() {
			time.Sleep(d)
		}
	})))
}

func TestAFairHandOffLearntAtARenewalEndsBeforeTheLock(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 300 * time.Millisecond
	fair := []lock.Option{lock.WithFair(), lock.WithTTL(ttl), lock.WithQueueLease(90 * time.Millisecond)}
	holder := open(t, srv, fair...)
	var stalled atomic.Bool
	waiter := open(t, srv, append(fair, stalledSubscriber(&stalled, 700*time.Millisecond))...)
	other := open(t, srv, fair...)
	for range 5 {
		held := mustLock(t, holder, "k")
		got := make(chan *lock.Lease, 1)
		go func() {
			ls, err := waiter.Lock(context.Background(), "k")
			if err != nil {
				ls = nil
			}
			got <- ls
		}()
		redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 5*time.Second, time.Millisecond)
		stalled.Store(true) // the hand-off's message will come late
		mustUnlock(t, held)
		ls := <-got
		stalled.Store(false)
		require.NotNil(t, ls)
		mustUnlock(t, takeOver(t, ls, other, "k"))
	}
}
