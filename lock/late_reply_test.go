package lock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// scriptLog is the order in which a fake server saw the lock's scripts.
type scriptLog struct {
	mu      sync.Mutex
	scripts []string
}

func (l *scriptLog) add(script string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.scripts = append(l.scripts, script)
}

func (l *scriptLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.scripts, " ")
}

// lateFirstAcquire is a fake server whose first acquire replies only
// after a lease of ttl would have run out, as a WAIT for a slow replica or
// a stalled connection can make it, and whose later acquires reply at
// once; it counts the releases, and logs the scripts in order.
func lateFirstAcquire(t *testing.T, srv *redistest.Server, ttl time.Duration, releases *atomic.Int32, log *scriptLog, opts ...lock.Option) *lock.Locker {
	t.Helper()
	return lateFirstAcquireReleasedAs(t, srv, ttl, ":1\r\n", releases, log, opts...)
}

// lateFirstAcquireReleasedAs is lateFirstAcquire, with release the reply
// to each release ("" cuts the connection with the release in flight).
func lateFirstAcquireReleasedAs(t *testing.T, srv *redistest.Server, ttl time.Duration, release string, releases *atomic.Int32, log *scriptLog, opts ...lock.Option) *lock.Locker {
	t.Helper()
	var acquires atomic.Int32
	return onFake(t, srv, func(_ int32, cmd []string) string {
		if script := fastScript(cmd); script != "" {
			log.add(script)
		}
		switch fastScript(cmd) {
		case fastAcquire:
			if acquires.Add(1) == 1 {
				time.Sleep(ttl + 50*time.Millisecond)
				return ":1764000000000000\r\n"
			}
			return ":1764000000000001\r\n"
		case fastRelease:
			releases.Add(1)
			return release
		}
		return ":1\r\n"
	}, append(opts, lock.WithTTL(ttl))...)
}

// A lease whose acquire's reply came after its deadline is over before
// Lock could return it, and the lock may be another owner's by then: Lock
// does not return it, releases its lock in case it still stands, and
// tries again. TryLock says so. The release comes before the next
// attempt: sent after it, it would release the lock that attempt took,
// with the same owner token, under the lease Lock returned.
func TestALeaseWhoseReplyCameAfterItsTTLIsNotReturned(t *testing.T) {
	const ttl = 100 * time.Millisecond
	t.Run("Lock", func(t *testing.T) {
		srv := redistest.Start(t)
		var releases atomic.Int32
		var log scriptLog
		l := lateFirstAcquire(t, srv, ttl, &releases, &log)
		ls, err := l.Lock(context.Background(), "k")
		require.NoError(t, err)
		require.Equal(t, "acquire release acquire", log.String(), "the late acquire's lock released before the next attempt")
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
		l := lateFirstAcquire(t, srv, ttl, &releases, new(scriptLog))
		ls, err := l.TryLock(context.Background(), "k")
		require.Nil(t, ls)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorContains(t, err, "after the lease's TTL had run out")
		redistest.Eventually(t, func() bool { return releases.Load() == 1 }, 5*time.Second, time.Millisecond,
			"the lock of the late acquire was never released")
	})
	t.Run("Lock, a release that does not end cleanly", func(t *testing.T) {
		// The claim stops: its next attempt would take the lock with the
		// same owner token, which a release still on its way would then
		// let go of under the lease Lock returned.
		srv := redistest.Start(t)
		var releases atomic.Int32
		var log scriptLog
		l := lateFirstAcquireReleasedAs(t, srv, ttl, "", &releases, &log, lock.WithReleaseTimeout(300*time.Millisecond))
		ls, err := l.Lock(context.Background(), "k")
		require.Nil(t, ls)
		require.ErrorAs(t, err, new(*conn.UncertainError))
		require.ErrorContains(t, err, "after the lease's TTL had run out")
		t.Logf("Lock: %v", err)
		require.Equal(t, 1, strings.Count(log.String(), "acquire"), "no attempt after the release that did not end cleanly")
	})
}
