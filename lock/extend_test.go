package lock_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// closesWithin reports whether ch closes within d.
func closesWithin(ch <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// An extension to a TTL shorter than the lease has left moves the lease's
// end earlier: Done, armed before the extension, closes by the time
// another owner can take the lock, not at the old deadline.
func TestExtendingToAShorterTTLClosesDoneEarlier(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		for _, auto := range []bool{false, true} {
			name := mode
			opts := modeOptions(mode, lock.WithTTL(10*time.Second))
			if auto {
				name += "+auto-extend"
				opts = append(opts, lock.WithAutoExtend())
			}
			t.Run(name, func(t *testing.T) {
				srv := redistest.Start(t)
				a := open(t, srv, opts...)
				b := open(t, srv, modeOptions(mode)...)
				ls := mustLock(t, a, "k")
				done := ls.Done()
				require.NoError(t, ls.Extend(context.Background(), 60*time.Millisecond))
				other := takeOver(t, ls, b, "k")
				defer mustUnlock(t, other)
				// Done closes at the deadline, which takeOver found no
				// later than the other's acquire; its timer may run a
				// little late on a loaded machine, never seconds.
				require.True(t, closesWithin(done, time.Second), "Done still open %v after the lock was taken over", time.Second)
			})
		}
	}
}

// Two extensions of one lease at once: Redis keeps the TTL of the one it
// ran last, and the lease's deadline must be no later than that, whichever
// reply is read last.
func TestConcurrentExtensionsFollowTheOneRedisRanLast(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			a := open(t, srv, modeOptions(mode, lock.WithTTL(10*time.Second))...)
			b := open(t, srv, modeOptions(mode)...)
			shortLast := 0
			for round := 0; shortLast < 15 && round < 400; round++ {
				ls := mustLock(t, a, "k")
				var wg sync.WaitGroup
				for _, ttl := range []time.Duration{5 * time.Second, 40 * time.Millisecond} {
					wg.Go(func() {
						err := ls.Extend(context.Background(), ttl)
						if err != nil {
							require.ErrorIs(t, err, lock.ErrNotHeld, "round %d", round)
						}
					})
				}
				wg.Wait()
				if srv.Do(t, "PTTL", "baton:{k}").Int > time.Second.Milliseconds() {
					mustUnlock(t, ls) // the long one ran last
					continue
				}
				shortLast++
				mustUnlock(t, takeOver(t, ls, b, "k"))
			}
			require.Equal(t, 15, shortLast, "Redis never ran the short extension last often enough to test")
		})
	}
}

// Extend with a TTL that Redis cannot take refuses it before sending
// anything: in milliseconds, the largest Duration once overflowed to a
// negative TTL, which Redis takes as "delete now", and Extend returned nil.
func TestExtendRefusesTTLsOutOfRange(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			l := open(t, srv, modeOptions(mode, lock.WithTTL(30*time.Second))...)
			ls := mustLock(t, l, "range-"+mode)
			key := "baton:{range-" + mode + "}"
			for _, ttl := range []time.Duration{math.MaxInt64, 100*365*24*time.Hour + time.Millisecond, 0, -time.Second, time.Microsecond} {
				err := ls.Extend(context.Background(), ttl)
				require.ErrorIs(t, err, lock.ErrInvalid, "ttl %v", ttl)
				require.Greater(t, srv.Do(t, "PTTL", key).Int, int64(20_000), "ttl %v reached the server", ttl)
				require.False(t, closesWithin(ls.Done(), 0), "ttl %v ended the lease", ttl)
			}
			// The longest TTL taken is sent exactly.
			require.NoError(t, ls.Extend(context.Background(), 100*365*24*time.Hour))
			require.InDelta(t, (100 * 365 * 24 * time.Hour).Milliseconds(), srv.Do(t, "PTTL", key).Int, 1000)
			mustUnlock(t, ls)
		})
	}
}

// Every TTL an option sends is range-checked at Open, and a TTL over the
// fencing counter's retention raises the retention with it: a two-hour
// lock is an ordinary need.
func TestOptionsRangeCheckTheirTTLs(t *testing.T) {
	srv := redistest.Start(t)
	for _, bad := range []lock.Option{
		lock.WithTTL(math.MaxInt64),
		lock.WithTTL(0),
		lock.WithQueueLease(math.MaxInt64),
		lock.WithFenceRetention(math.MaxInt64),
	} {
		_, err := lock.Open(context.Background(), srv.Addr, bad)
		require.ErrorIs(t, err, lock.ErrInvalid)
	}
	for _, mode := range []string{"fast", "fair"} {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(2*time.Hour))...)
		ls := mustLock(t, l, "batch-"+mode)
		require.Greater(t, srv.Do(t, "PTTL", "baton:{batch-"+mode+"}").Int, (time.Hour + 59*time.Minute).Milliseconds())
		require.GreaterOrEqual(t, srv.Do(t, "PTTL", "baton:{batch-"+mode+"}:fence").Int, (time.Hour + 59*time.Minute).Milliseconds(),
			"the fencing counter would expire before the lock")
		mustUnlock(t, ls)
	}
}

// An extension whose context ends while it is on its way may have run:
// the deadline becomes the earlier of the two it could be, so that a
// shorter extension that did run cannot leave the lease open past the
// lock.
func TestAnExtensionCutShortIsTakenAsRunWhereThatIsShorter(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(10*time.Second))
	ls := mustLock(t, l, "k")
	paused := time.Now()
	srv.Pause(t, 300*time.Millisecond) // CLIENT PAUSE: the extension waits in the server
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := ls.Extend(ctx, 100*time.Millisecond)
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	require.False(t, lock.Deadline(ls).After(paused.Add(400*time.Millisecond)),
		"an extension to 100ms that may have run left the deadline %v away", time.Until(lock.Deadline(ls)))
}

// Close breaks the connection under calls stuck on a server that stopped
// answering, after a release timeout, so that it ends in bounded time. An
// Extend that waited for its turn behind a stuck one must not then send
// its own on the redialed connection and hold Close up for ever.
func TestCloseIsBoundedWithAnExtendWaitingForItsTurn(t *testing.T) {
	const releaseTimeout = 200 * time.Millisecond
	srv := redistest.Start(t)
	stall := make(chan struct{})
	var extends atomic.Int32
	l := onFake(t, srv, func(_ int32, cmd []string) string {
		switch {
		case fastScript(cmd) == fastAcquire:
			return ":1764000000000000\r\n"
		case cmd[2] == "1": // the extension: the server stopped answering
			extends.Add(1)
			<-stall
			return ":1\r\n"
		}
		return ":1\r\n"
	}, lock.WithReleaseTimeout(releaseTimeout))
	t.Cleanup(func() { close(stall) }) // before the fake's cleanup waits for its handlers
	ls, err := l.TryLock(context.Background(), "k")
	require.NoError(t, err)
	extended := make(chan error, 2)
	go func() { extended <- ls.Extend(context.Background(), time.Minute) }()
	redistest.Eventually(t, func() bool { return extends.Load() == 1 }, 5*time.Second, time.Millisecond, "the first extension is stuck on the server")
	go func() { extended <- ls.Extend(context.Background(), time.Minute) }()
	time.Sleep(50 * time.Millisecond) // the second waits for its turn
	closed := make(chan error, 1)
	start := time.Now()
	go func() { closed <- l.Close() }()
	select {
	case <-closed:
		t.Logf("Close took %v; extensions sent: %d", time.Since(start), extends.Load())
	case <-time.After(10 * releaseTimeout):
		t.Fatalf("Close still waiting after %v; extensions sent to the stalled server: %d", 10*releaseTimeout, extends.Load())
	}
	for range 2 {
		require.Error(t, <-extended)
	}
}
