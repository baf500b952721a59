package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// lateFirstAcquire is a fake server whose first acquire replies only
// after a lease of ttl would have run out, as a WAIT for a slow replica or
// a stalled connection can make it, and whose later acquires reply at
// once; it counts the releases.
func lateFirstAcquire(t *testing.T, srv *redistest.Server, ttl time.Duration, releases *atomic.Int32, opts ...lock.Option) *lock.Locker {
	t.Helper()
	var acquires atomic.Int32
	return onFake(t, srv, func(_ int32, cmd []string) string {
		switch fastScript(cmd) {
		case fastAcquire:
			if acquires.Add(1) == 1 {
				time.Sleep(ttl + 50*time.Millisecond)
				return ":1764000000000000\r\n"
			}
			return ":1764000000000001\r\n"
		case fastRelease:
			releases.Add(1)
			return ":1\r\n"
		}
		return ":1\r\n"
	}, append(opts, lock.WithTTL(ttl))...)
}

// A lease whose acquire's reply came after its deadline is over before
// Lock could return it, and the lock may be another owner's by then: Lock
// does not return it, releases its lock in case it still stands, and
// tries again. TryLock says so.
func TestALeaseWhoseReplyCameAfterItsTTLIsNotReturned(t *testing.T) {
	const ttl = 100 * time.Millisecond
	t.Run("Lock", func(t *testing.T) {
		srv := redistest.Start(t)
		var releases atomic.Int32
		l := lateFirstAcquire(t, srv, ttl, &releases)
		ls, err := l.Lock(context.Background(), "k")
		require.NoError(t, err)
		require.Equal(t, uint64(1764000000000001), ls.Token(), "the lease of the second acquire")
		select {
		case <-ls.Done():
			t.Fatal("Lock returned a lease that had run out")
		default:
		}
		redistest.Eventually(t, func() bool { return releases.Load() == 1 }, 5*time.Second, time.Millisecond,
			"the lock of the late acquire was never released")
	})
	t.Run("TryLock", func(t *testing.T) {
		srv := redistest.Start(t)
		var releases atomic.Int32
		l := lateFirstAcquire(t, srv, ttl, &releases)
		ls, err := l.TryLock(context.Background(), "k")
		require.Nil(t, ls)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorContains(t, err, "after the lease's TTL had run out")
		redistest.Eventually(t, func() bool { return releases.Load() == 1 }, 5*time.Second, time.Millisecond,
			"the lock of the late acquire was never released")
	})
}
