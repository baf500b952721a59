package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// slowReplies delays every read on a connection while on is set, so that a
// reply lands after whatever the test needs to happen first.
func slowReplies(on *atomic.Bool, d time.Duration) conn.Option {
	return conn.WithTap(func(dir conn.Direction, _ []byte) {
		if dir == conn.Read && on.Load() {
			time.Sleep(d)
		}
	})
}

func TestCloseEndsWaitingLocksAndLeavesNothingHeld(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			opts := modeOptions(mode)
			holder := open(t, srv, append(opts, lock.WithTTL(time.Minute))...)
			held := mustLock(t, holder, "busy")

			var slow atomic.Bool
			l, err := lock.Open(context.Background(), srv.Addr,
				append(opts, lock.WithTTL(time.Minute), lock.WithConnOptions(slowReplies(&slow, 100*time.Millisecond)))...)
			require.NoError(t, err)
			waiting := make(chan error, 1)
			go func() { _, err := l.Lock(context.Background(), "busy"); waiting <- err }()
			inFlight := make(chan error, 1)
			time.Sleep(50 * time.Millisecond) // the waiter is queued or subscribed
			slow.Store(true)
			go func() { _, err := l.Lock(context.Background(), "free"); inFlight <- err }()
			time.Sleep(20 * time.Millisecond) // its acquire is sent, its reply is slow
			require.NoError(t, l.Close())

			require.ErrorIs(t, <-waiting, lock.ErrClosed)
			if err := <-inFlight; err != nil {
				require.ErrorIs(t, err, lock.ErrClosed)
			}
			require.Zero(t, srv.Do(t, "EXISTS", "baton:{free}").Int, "a Lock cut short by Close left its lock held")
			require.Zero(t, srv.Do(t, "ZCARD", "baton:{busy}:queue").Int)
			mustUnlock(t, held)
		})
	}
}

func TestAnExtensionThatLandsAfterTheLeaseRanOutIsUndone(t *testing.T) {
	srv := redistest.Start(t)
	var slow atomic.Bool
	l := open(t, srv, lock.WithTTL(100*time.Millisecond), lock.WithConnOptions(slowReplies(&slow, 150*time.Millisecond)))
	ls := mustLock(t, l, "k")
	done := ls.Done()
	slow.Store(true)
	err := ls.Extend(context.Background(), time.Minute)
	slow.Store(false)
	require.ErrorIs(t, err, lock.ErrNotHeld)
	<-done
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond,
		"the extension left the lock held for a minute after its lease ended")
}

// TestDoneRunsOutWhileCloseWaitsForCalls: Close first waits, up to the
// release timeout, for the calls in progress, and only then releases the
// leases still held. A lease whose deadline passes meanwhile must still
// close Done at its deadline, whenever Done was first called: the lock's
// TTL ends it in Redis, and another owner may take it.
func TestDoneRunsOutWhileCloseWaitsForCalls(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			const ttl = 300 * time.Millisecond
			l, err := lock.Open(context.Background(), srv.Addr, modeOptions(mode, lock.WithTTL(ttl))...)
			require.NoError(t, err)
			ls := mustLock(t, l, "k-"+mode)
			acquired := time.Now()
			// A call stuck on the server, which Close waits for.
			srv.Do(t, "CLIENT", "PAUSE", "2000", "WRITE")
			defer srv.Do(t, "CLIENT", "UNPAUSE")
			stuck := make(chan error, 1)
			go func() {
				_, err := l.TryLock(context.Background(), "other-"+mode)
				stuck <- err
			}()
			time.Sleep(50 * time.Millisecond)
			closed := make(chan error, 1)
			go func() { closed <- l.Close() }()
			// Close marks the Locker closed at once (every call's
			// probe on the server would wait out the pause).
			time.Sleep(50 * time.Millisecond)
			require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrClosed, "Close has begun")

			select {
			case <-ls.Done():
				t.Logf("%s: Done closed %v after the acquire (TTL %v)", mode, time.Since(acquired).Round(time.Millisecond), ttl)
			case <-time.After(time.Until(acquired.Add(ttl + 500*time.Millisecond))):
				t.Fatalf("Done still open %v after the acquire, with a TTL of %v", time.Since(acquired).Round(time.Millisecond), ttl)
			}
			srv.Do(t, "CLIENT", "UNPAUSE")
			<-stuck
			require.NoError(t, <-closed)
		})
	}
}

// TestDoneAskedAfterTheDeadlineIsClosed: a lease whose deadline passed
// before its Done was first asked for (a slow reply, a slow caller) finds
// Done closed on return, not a moment later when a timer runs, and its
// lock is released.
func TestDoneAskedAfterTheDeadlineIsClosed(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			const ttl = 20 * time.Millisecond
			l := open(t, srv, modeOptions(mode, lock.WithTTL(ttl))...)
			ls := mustLock(t, l, "k-"+mode)
			time.Sleep(2 * ttl)
			select {
			case <-ls.Done():
			default:
				t.Fatal("Done was open on return, past the deadline")
			}
			require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
		})
	}
}
