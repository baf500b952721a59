package lock_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// documentedError is one promise of a doc comment that an error matches a
// target, provoked through the public API.
type documentedError struct {
	doc       string                                          // the doc that promises it, and the case
	call      func(t *testing.T, srv *redistest.Server) error // provokes the error, on srv flushed
	is        []error                                         // what errors.Is must match
	uncertain bool                                            // whether errors.As must find a *conn.UncertainError
}

// TestEveryDocumentedErrorMatches provokes every error that a doc of
// package lock promises a call returns, and checks that it matches what
// the doc says with errors.Is and errors.As: one row per promise, named
// after the doc that makes it.
func TestEveryDocumentedErrorMatches(t *testing.T) {
	srv := redistest.Start(t)
	bg := context.Background()
	held := func(t *testing.T, opts ...lock.Option) (*lock.Locker, *lock.Lease) {
		l := open(t, srv, opts...)
		return l, mustLock(t, l, "k")
	}
	closedLocker := func(t *testing.T) *lock.Locker {
		l, err := lock.Open(bg, srv.Addr)
		require.NoError(t, err)
		require.NoError(t, l.Close())
		return l
	}
	// leaseOfClosed is a lease whose Locker is closed, which Close
	// released.
	leaseOfClosed := func(t *testing.T) *lock.Lease {
		l, err := lock.Open(bg, srv.Addr)
		require.NoError(t, err)
		ls := mustLock(t, l, "k")
		require.NoError(t, l.Close())
		return ls
	}
	// lost is a lease whose lock another owner took: the lock deleted,
	// as if it expired, and taken by another Locker.
	lost := func(t *testing.T) *lock.Lease {
		_, ls := held(t)
		srv.Do(t, "DEL", "baton:{k}")
		mustLock(t, open(t, srv), "k")
		return ls
	}
	// pausedWrites holds back every write of the server's clients for
	// d, ended when the test ends if not before: a command sent
	// meanwhile is on its way, and may run later.
	pausedWrites := func(t *testing.T, d time.Duration) {
		srv.Do(t, "CLIENT", "PAUSE", strconv.FormatInt(d.Milliseconds(), 10), "WRITE")
		t.Cleanup(func() { srv.Do(t, "CLIENT", "UNPAUSE") })
	}
	state := lock.Write{Key: "baton:{k}:state", Value: "v", TTL: time.Minute}

	rows := []documentedError{
		// ErrNotAcquired.
		{doc: "Locker.TryLock: another owner holds the lock", is: []error{lock.ErrNotAcquired},
			call: func(t *testing.T, srv *redistest.Server) error {
				held(t)
				_, err := open(t, srv).TryLock(bg, "k")
				return err
			}},
		{doc: "Locker.TryLock, fair: a queued waiter counts as a holder", is: []error{lock.ErrNotAcquired},
			call: func(t *testing.T, srv *redistest.Server) error {
				held(t, lock.WithFair())
				_, err := open(t, srv, lock.WithFair()).TryLock(bg, "k")
				return err
			}},
		{doc: "Locker.TryLock: the attempt's reply came after the lease's TTL had run out", is: []error{lock.ErrNotAcquired},
			call: func(t *testing.T, srv *redistest.Server) error {
				var releases atomic.Int32
				_, err := lateFirstAcquire(t, srv, 100*time.Millisecond, &releases, new(scriptLog)).TryLock(bg, "k")
				return err
			}},
		{doc: "Locker.Lock: WithReplicaAck's replicas did not acknowledge the acquire", is: []error{lock.ErrNotAcquired},
			call: func(t *testing.T, srv *redistest.Server) error {
				// The undone acquire's release, unacknowledged too, is
				// sent again until the release timeout, which Close waits
				// out.
				l := open(t, srv, lock.WithReplicaAck(1, 20*time.Millisecond), lock.WithReleaseTimeout(200*time.Millisecond))
				_, err := l.Lock(bg, "k")
				return err
			}},
		{doc: "ErrNotAcquired: TryLock when WithReplicaAck's replicas did not acknowledge", is: []error{lock.ErrNotAcquired},
			call: func(t *testing.T, srv *redistest.Server) error {
				// The undone acquire's release, unacknowledged too, is
				// sent again until the release timeout, which Close waits
				// out.
				l := open(t, srv, lock.WithReplicaAck(1, 20*time.Millisecond), lock.WithReleaseTimeout(200*time.Millisecond))
				_, err := l.TryLock(bg, "k")
				return err
			}},

		// ErrNotHeld.
		{doc: "Lease.Unlock: the lease had ended", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				mustUnlock(t, ls)
				return ls.Unlock(bg)
			}},
		{doc: "Lease.Unlock: the lock belongs to someone else by the time the release runs", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, _ *redistest.Server) error { return lost(t).Unlock(bg) }},
		{doc: "Lease.Extend: the lock expired or another owner has it", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, _ *redistest.Server) error { return lost(t).Extend(bg, time.Minute) }},
		{doc: "Lease.Extend: the reply came after the lease ran out by this process's clock", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, srv *redistest.Server) error {
				var slow atomic.Bool
				l := open(t, srv, lock.WithTTL(100*time.Millisecond), lock.WithConnOptions(slowReplies(&slow, 150*time.Millisecond)))
				ls := mustLock(t, l, "k")
				// Running out is noticed by the timer behind Done, which
				// sends the release that undoes the extension.
				ls.Done()
				slow.Store(true)
				defer slow.Store(false)
				return ls.Extend(bg, time.Minute)
			}},
		{doc: "Lease.Commit: the lease no longer owns the lock", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, err := lost(t).Commit(bg, state)
				return err
			}},
		{doc: "Lease.Commit with Write.Unlock: as Unlock, the lease no longer owns the lock", is: []error{lock.ErrNotHeld},
			call: func(t *testing.T, _ *redistest.Server) error {
				w := state
				w.Unlock = true
				_, err := lost(t).Commit(bg, w)
				return err
			}},

		// ErrStateMissing.
		{doc: "Write.IfExists: the key is missing, the lock kept", is: []error{lock.ErrStateMissing},
			call: func(t *testing.T, _ *redistest.Server) error {
				w := state
				w.IfExists = true
				_, ls := held(t)
				_, err := ls.Commit(bg, w)
				return err
			}},
		{doc: "Write.IfExists: the key is missing, the lock released (Unlock)", is: []error{lock.ErrStateMissing},
			call: func(t *testing.T, _ *redistest.Server) error {
				w := state
				w.IfExists, w.Unlock = true, true
				_, ls := held(t)
				_, err := ls.Commit(bg, w)
				return err
			}},

		// ErrInvalid.
		{doc: "package lock: an empty key (Lock)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := open(t, srv).Lock(bg, "")
				return err
			}},
		{doc: "package lock: a key over 1024 bytes (TryLock)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := open(t, srv).TryLock(bg, strings.Repeat("k", 1025))
				return err
			}},
		{doc: "package lock: a key that leaves an empty hash tag (LockAndDo)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, _, err := open(t, srv).LockAndDo(bg, "}k", []string{"GET", "x"})
				return err
			}},
		{doc: "Locker.Inspect: invalid keys are refused as Lock refuses them", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := open(t, srv).Inspect(bg, "")
				return err
			}},
		{doc: "ErrInvalid: a nil context (Lock)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := open(t, srv).Lock(nil, "k") //nolint:staticcheck // the nil context is the case
				return err
			}},
		{doc: "ErrInvalid: a nil context (Open)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(nil, srv.Addr) //nolint:staticcheck // the nil context is the case
				return err
			}},
		{doc: "package lock, Guarantees: a TTL under 1ms (WithTTL)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithTTL(0))
				return err
			}},
		{doc: "package lock, Guarantees: a TTL over 100 years (WithTTL)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithTTL(101*365*24*time.Hour))
				return err
			}},
		{doc: "WithQueueLease: at least 3ms", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithFair(), lock.WithQueueLease(time.Millisecond))
				return err
			}},
		{doc: "WithReleaseTimeout: more than 0", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithReleaseTimeout(0))
				return err
			}},
		{doc: "WithReplicaAck: n at least 0", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithReplicaAck(-1, time.Second))
				return err
			}},
		{doc: "WithReplicaAck: a timeout of at least a millisecond", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				_, err := lock.Open(bg, srv.Addr, lock.WithReplicaAck(1, 0))
				return err
			}},
		{doc: "Open: a maxmemory-policy that may evict keys", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, srv *redistest.Server) error {
				srv.Do(t, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
				defer srv.Do(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				_, err := lock.Open(bg, srv.Addr)
				return err
			}},
		{doc: "New: a nil client or subscriber", is: []error{lock.ErrInvalid},
			call: func(*testing.T, *redistest.Server) error {
				_, err := lock.New(nil, nil)
				return err
			}},
		{doc: "Lease.Extend: a TTL under a millisecond", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				return ls.Extend(bg, 0)
			}},
		{doc: "ErrInvalid: a nil context (Extend)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				return ls.Extend(nil, time.Minute) //nolint:staticcheck // the nil context is the case
			}},
		{doc: "ErrInvalid: a nil context (Unlock)", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				return ls.Unlock(nil) //nolint:staticcheck // the nil context is the case
			}},
		{doc: "Lease.Commit: a w.Key that does not share the lock's hash tag", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				_, err := ls.Commit(bg, lock.Write{Key: "elsewhere", Value: "v", TTL: time.Minute})
				return err
			}},
		{doc: "Lease.Commit: a TTL out of range", is: []error{lock.ErrInvalid},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				_, err := ls.Commit(bg, lock.Write{Key: state.Key, Value: "v"})
				return err
			}},

		// ErrClosed.
		{doc: "Locker.Close: later calls fail (Lock)", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, err := closedLocker(t).Lock(bg, "k")
				return err
			}},
		{doc: "Locker.Close: later calls fail (TryLock)", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, err := closedLocker(t).TryLock(bg, "k")
				return err
			}},
		{doc: "Locker.Close: later calls fail (LockAndDo)", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, _, err := closedLocker(t).LockAndDo(bg, "k", []string{"GET", "x"})
				return err
			}},
		{doc: "Locker.Inspect: a closed Locker", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, err := closedLocker(t).Inspect(bg, "k")
				return err
			}},
		{doc: "Lease.Unlock: once the Locker's Close has begun", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error { return leaseOfClosed(t).Unlock(bg) }},
		{doc: "Locker.Close: later calls fail (Extend)", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error { return leaseOfClosed(t).Extend(bg, time.Minute) }},
		{doc: "Locker.Close: later calls fail (Commit)", is: []error{lock.ErrClosed},
			call: func(t *testing.T, _ *redistest.Server) error {
				_, err := leaseOfClosed(t).Commit(bg, state)
				return err
			}},
		{doc: "Locker.Close: waiting Locks return ErrClosed", is: []error{lock.ErrClosed},
			call: func(t *testing.T, srv *redistest.Server) error {
				held(t)
				l, err := lock.Open(bg, srv.Addr)
				require.NoError(t, err)
				waiting := make(chan error, 1)
				go func() { _, err := l.Lock(bg, "k"); waiting <- err }()
				redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}:wanted").Int == 1 }, 5*time.Second, time.Millisecond,
					"the Lock never asked")
				require.NoError(t, l.Close())
				return <-waiting
			}},

		// conn.UncertainError.
		{doc: "Lease.Unlock: ctx ended first (and it matches ctx's error)", is: []error{context.Canceled}, uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				ctx, cancel := context.WithCancel(bg)
				cancel()
				return ls.Unlock(ctx)
			}},
		{doc: "Lease.Unlock: no reply within the release timeout", uncertain: true,
			call: func(t *testing.T, srv *redistest.Server) error {
				l := onStalledFake(t, srv, fastRelease, 200*time.Millisecond)
				return mustLock(t, l, "k").Unlock(bg)
			}},
		{doc: "Lease.Unlock: a retried release found the lock gone", uncertain: true,
			call: func(t *testing.T, srv *redistest.Server) error {
				var releases atomic.Int32
				l := onFakeThatCutsTheFirstRelease(t, srv, ":0\r\n", &releases, nil)
				return mustLock(t, l, "k").Unlock(bg)
			}},
		{doc: "Lease.Extend: ctx ended while it was on its way", is: []error{context.DeadlineExceeded}, uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				pausedWrites(t, 2*time.Second)
				ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
				defer cancel()
				return ls.Extend(ctx, time.Minute)
			}},
		{doc: "Lease.Commit: the write may or may not have landed", is: []error{context.DeadlineExceeded}, uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				_, ls := held(t)
				pausedWrites(t, 2*time.Second)
				ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
				defer cancel()
				_, err := ls.Commit(ctx, state)
				return err
			}},
		{doc: "Locker.Close: a command in flight past the release timeout", uncertain: true,
			call: func(t *testing.T, srv *redistest.Server) error {
				var armed atomic.Bool
				var once sync.Once
				sent := make(chan struct{})
				tap := conn.WithTap(func(dir conn.Direction, p []byte) {
					if dir == conn.Write && armed.Load() && bytes.Contains(p, []byte("EVALSHA")) {
						once.Do(func() { close(sent) })
					}
				})
				l, err := lock.Open(bg, srv.Addr, lock.WithReleaseTimeout(200*time.Millisecond), lock.WithConnOptions(tap))
				require.NoError(t, err)
				ls := mustLock(t, l, "k")
				pausedWrites(t, 5*time.Second)
				armed.Store(true)
				extended := make(chan error, 1)
				go func() { extended <- ls.Extend(bg, time.Minute) }()
				<-sent // the extension is on its way
				require.NoError(t, l.Close())
				return <-extended
			}},
		{doc: "Locker.TryLock: a late reply, and the release of the lock it took did not end cleanly", uncertain: true,
			call: func(t *testing.T, srv *redistest.Server) error {
				var releases atomic.Int32
				l := lateFirstAcquireReleasedAs(t, srv, 100*time.Millisecond, "", &releases, new(scriptLog), lock.WithReleaseTimeout(300*time.Millisecond))
				_, err := l.TryLock(bg, "k")
				return err
			}},
		{doc: "WithReplicaAck: an extension too few replicas acknowledged", uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				ls, replica := leaseAckedByAPausedReplica(t)
				defer replica.Resume()
				return ls.Extend(bg, time.Minute)
			}},
		{doc: "WithReplicaAck: a write-back too few replicas acknowledged", uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				ls, replica := leaseAckedByAPausedReplica(t)
				defer replica.Resume()
				_, err := ls.Commit(bg, state)
				return err
			}},
		{doc: "WithReplicaAck: a release too few replicas acknowledged", uncertain: true,
			call: func(t *testing.T, _ *redistest.Server) error {
				ls, replica := leaseAckedByAPausedReplica(t)
				defer replica.Resume()
				return ls.Unlock(bg)
			}},

		// Other targets the docs name.
		{doc: "Locker.Lock: ctx's error if ctx ends first", is: []error{context.DeadlineExceeded},
			call: func(t *testing.T, srv *redistest.Server) error {
				held(t)
				ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
				defer cancel()
				_, err := open(t, srv).Lock(ctx, "k")
				return err
			}},
		{doc: "Locker.Inspect: a key of a type baton never writes is resp.WrongType", is: []error{resp.WrongType},
			call: func(t *testing.T, srv *redistest.Server) error {
				srv.Do(t, "HSET", "baton:{k}", "f", "v")
				_, err := open(t, srv).Inspect(bg, "k")
				return err
			}},
		{doc: "Locker.Inspect: values baton never writes are resp.ErrProtocol", is: []error{resp.ErrProtocol},
			call: func(t *testing.T, srv *redistest.Server) error {
				srv.Do(t, "SET", "baton:{k}", "o", "PX", "10000")
				srv.Do(t, "SET", "baton:{k}:fence", "abc")
				_, err := open(t, srv).Inspect(bg, "k")
				return err
			}},
	}
	for _, row := range rows {
		t.Run(row.doc, func(t *testing.T) {
			srv.Do(t, "FLUSHALL")
			err := row.call(t, srv)
			require.Error(t, err)
			t.Log(err)
			for _, target := range row.is {
				require.ErrorIs(t, err, target)
			}
			if row.uncertain {
				require.ErrorAs(t, err, new(*conn.UncertainError))
			}
		})
	}
}

// leaseAckedByAPausedReplica is a lease of a Locker whose writes one
// replica must acknowledge within a second (WithReplicaAck), taken while
// it does, and the replica, paused (for up to 10s) so that it no longer
// does.
func leaseAckedByAPausedReplica(t *testing.T) (*lock.Lease, *redistest.Server) {
	t.Helper()
	l, _, replica := openAckedByAReplica(t, "fast")
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	ls := mustLock(t, l, "k")
	replica.Pause(t, 10*time.Second)
	return ls, replica
}
