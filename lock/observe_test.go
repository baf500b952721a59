package lock_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/observe"
)

// lockModes are the Locker's modes, with the options that make each and the
// name events give it.
var lockModes = []struct {
	name     string
	opts     []lock.Option
	observed observe.Mode
}{
	{"fast", nil, observe.Fast},
	{"fair", []lock.Option{lock.WithFair()}, observe.Fair},
}

// openObserved returns a Locker on srv with a recorder, both ended when
// the test ends; close it to have every event delivered.
func openObserved(t *testing.T, srv *redistest.Server, opts ...lock.Option) (*lock.Locker, *observing.Recorder) {
	t.Helper()
	rec := &observing.Recorder{}
	return open(t, srv, append(opts, lock.WithObserver(rec))...), rec
}

func TestAnUncontendedLockIsObservedFromCallToRelease(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			l, rec := openObserved(t, srv, mode.opts...)
			ls := mustLock(t, l, "k")
			mustUnlock(t, ls)
			require.NoError(t, l.Close())

			require.Equal(t, []observe.Kind{observe.CallBegan, observe.LeaseGranted, observe.CallEnded, observe.LeaseEnded}, rec.Kinds(0))
			began, ended := rec.Of(observe.CallBegan)[0], rec.Of(observe.CallEnded)[0]
			require.NotZero(t, began.Call)
			require.Equal(t, began.Call, ended.Call)
			require.Equal(t, observe.Lock, began.Op)
			require.Equal(t, "k", began.Key)
			require.Equal(t, mode.observed, began.Mode)
			require.NotNil(t, began.Context)
			require.NoError(t, ended.Err)
			require.Equal(t, observe.Free, ended.How)
			require.Equal(t, ls.Token(), ended.Token)
			require.Positive(t, ended.Duration)
			leaseEnd := rec.Of(observe.LeaseEnded)[0]
			require.Equal(t, observe.Released, leaseEnd.Reason)
			require.Equal(t, ls.Token(), leaseEnd.Token)
			require.Equal(t, began.Call, leaseEnd.Call)
		})
	}
}

// handedOnceAsked has waiter Lock "k" and Unlock it, releases held once
// rec has heard the waiter ask, and returns the waiter's error.
func handedOnceAsked(t *testing.T, waiter *lock.Locker, held *lock.Lease, rec *observing.Recorder) error {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		ls, err := waiter.Lock(context.Background(), "k")
		if err == nil {
			err = ls.Unlock(context.Background())
		}
		got <- err
	}()
	redistest.Eventually(t, func() bool { return len(rec.Of(observe.Asked)) == 1 },
		10*time.Second, time.Millisecond, "the waiter never asked")
	mustUnlock(t, held)
	return <-got
}

func TestAHandOffIsObservedOnTheWaitersCall(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			holder := open(t, srv, mode.opts...)
			waiter, rec := openObserved(t, srv, mode.opts...)
			require.NoError(t, handedOnceAsked(t, waiter, mustLock(t, holder, "k"), rec))
			require.NoError(t, waiter.Close())

			require.Equal(t, []observe.Kind{observe.CallBegan, observe.Asked, observe.HandedOver,
				observe.LeaseGranted, observe.CallEnded, observe.LeaseEnded}, rec.Kinds(0))
			ended := rec.Of(observe.CallEnded)[0]
			require.Equal(t, observe.Handed, ended.How)
			require.Equal(t, observe.Handed, rec.Of(observe.LeaseGranted)[0].How)
			require.NoError(t, ended.Err)
			handed := rec.Of(observe.HandedOver)[0]
			require.GreaterOrEqual(t, handed.Duration, time.Duration(0))
			require.Less(t, handed.Duration, ended.Duration)
		})
	}
}

func TestAConfirmedHandOffIsObservedAsOne(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			// Another TTL than the holder's: the message cannot stand for
			// the waiter's lease, which confirms it.
			holder := open(t, srv, append(mode.opts, lock.WithTTL(time.Minute))...)
			waiter, rec := openObserved(t, srv, mode.opts...)
			require.NoError(t, handedOnceAsked(t, waiter, mustLock(t, holder, "k"), rec))
			require.NoError(t, waiter.Close())
			require.Equal(t, []observe.Kind{observe.CallBegan, observe.Asked, observe.HandedOver, observe.Confirming,
				observe.LeaseGranted, observe.CallEnded, observe.LeaseEnded}, rec.Kinds(0))
			require.Equal(t, observe.Handed, rec.Of(observe.CallEnded)[0].How)
		})
	}
}

func TestATryLockOnAHeldLockIsObservedWithItsError(t *testing.T) {
	srv := redistest.Start(t)
	l, rec := openObserved(t, srv)
	held := mustLock(t, open(t, srv), "k")
	_, err := l.TryLock(context.Background(), "k")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	mustUnlock(t, held)
	require.NoError(t, l.Close())
	require.Equal(t, []observe.Kind{observe.CallBegan, observe.CallEnded}, rec.Kinds(0))
	ended := rec.Of(observe.CallEnded)[0]
	require.Equal(t, observe.TryLock, ended.Op)
	require.ErrorIs(t, ended.Err, lock.ErrNotAcquired)
	require.Zero(t, ended.Token)
}

func TestEveryWayALeaseEndsIsObservedWithItsReason(t *testing.T) {
	t.Run("expired", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv, lock.WithTTL(50*time.Millisecond))
		ls := mustLock(t, l, "k")
		<-ls.Done()
		require.NoError(t, l.Close())
		require.Equal(t, observe.Expired, rec.Of(observe.LeaseEnded)[0].Reason)
	})
	t.Run("lost", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv)
		ls := mustLock(t, l, "k")
		srv.Do(t, "SET", "baton:{k}", "someone else")
		require.ErrorIs(t, ls.Extend(context.Background(), time.Second), lock.ErrNotHeld)
		require.NoError(t, l.Close())
		require.Equal(t, observe.Lost, rec.Of(observe.LeaseEnded)[0].Reason)
	})
	t.Run("closed", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv)
		mustLock(t, l, "k")
		require.NoError(t, l.Close())
		require.Equal(t, observe.Closed, rec.Of(observe.LeaseEnded)[0].Reason)
	})
	for _, tt := range []struct {
		name string
		lose []string
		want observe.Reason
	}{
		{"removed", []string{"DEL", "baton:{k}"}, observe.Removed},
		{"overwritten", []string{"SET", "baton:{k}", "someone else"}, observe.Overwritten},
		{"flushed", []string{"FLUSHALL"}, observe.Flushed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			l, rec := openObserved(t, srv)
			ls := mustLock(t, l, "k")
			ctx := ls.Context(context.Background())
			awaitTracked(t, srv)
			srv.Do(t, tt.lose...)
			<-ctx.Done()
			require.NoError(t, l.Close())
			require.Equal(t, tt.want, rec.Of(observe.LeaseEnded)[0].Reason)
		})
	}
	t.Run("vanished", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv)
		ls := mustLock(t, l, "k")
		ctx := ls.Context(context.Background())
		awaitTracked(t, srv)
		srv.Restart(t)
		<-ctx.Done()
		require.NoError(t, l.Close())
		require.Equal(t, observe.Vanished, rec.Of(observe.LeaseEnded)[0].Reason)
	})
	t.Run("extension failed", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv, lock.WithTTL(300*time.Millisecond), lock.WithAutoExtend())
		ls := mustLock(t, l, "k")
		srv.Do(t, "CLIENT", "PAUSE", "1000", "WRITE")
		<-ls.Done()
		require.NoError(t, l.Close())
		failed := rec.Of(observe.ExtendFailed)
		require.NotEmpty(t, failed)
		require.Equal(t, ls.Token(), failed[0].Token)
		require.Error(t, failed[0].Err)
		require.Equal(t, observe.ExtensionFailed, rec.Of(observe.LeaseEnded)[0].Reason)
	})
}

func TestASubscribersReconnectIsObserved(t *testing.T) {
	srv := redistest.Start(t)
	l, rec := openObserved(t, srv)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	redistest.Eventually(t, func() bool { return len(rec.Of(observe.Reconnected)) == 1 },
		10*time.Second, time.Millisecond, "no reconnect observed")
	require.NoError(t, l.Close())
	require.Equal(t, []observe.Kind{observe.ConnectionLost, observe.Reconnected}, rec.Kinds(0))
	require.Equal(t, observe.Fast, rec.Of(observe.Reconnected)[0].Mode, "the Locker's mode")
	require.Error(t, rec.Of(observe.ConnectionLost)[0].Err)
	require.Positive(t, rec.Of(observe.Reconnected)[0].Duration)
}

// blockingObserver blocks in Observe until unblock is closed.
type blockingObserver struct {
	entered chan struct{} // closed at the first Observe
	unblock chan struct{}
	once    sync.Once
	rec     observing.Recorder
}

func (b *blockingObserver) Observe(e observe.Event) {
	b.once.Do(func() { close(b.entered) })
	<-b.unblock
	b.rec.Observe(e)
}

func TestAnObserverThatBlocksDelaysNoHandOff(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			obs := &blockingObserver{entered: make(chan struct{}), unblock: make(chan struct{})}
			a := open(t, srv, append(mode.opts, lock.WithObserver(obs))...)
			b := open(t, srv, append(mode.opts, lock.WithObserver(obs))...)
			const rounds = 20
			var wg sync.WaitGroup
			for _, l := range []*lock.Locker{a, b} {
				wg.Go(func() {
					for range rounds {
						ls, err := l.Lock(context.Background(), "k")
						if !assertNoError(t, err) {
							return
						}
						assertNoError(t, ls.Unlock(context.Background()))
					}
				})
			}
			<-obs.entered
			wg.Wait() // every hand-off done while the observer is stuck at its first event
			require.Empty(t, obs.rec.Kinds(0))
			close(obs.unblock)
			require.NoError(t, a.Close())
			require.NoError(t, b.Close())
			require.Len(t, obs.rec.Of(observe.LeaseGranted), 2*rounds)
			require.Len(t, obs.rec.Of(observe.LeaseEnded), 2*rounds)
			require.Empty(t, obs.rec.Of(observe.Dropped))
		})
	}
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestEventsThatFindTheQueueFullAreCountedAndNoCallIsLeftOpen(t *testing.T) {
	srv := redistest.Start(t)
	obs := &blockingObserver{entered: make(chan struct{}), unblock: make(chan struct{})}
	l := open(t, srv, lock.WithObserver(obs))
	held := mustLock(t, open(t, srv), "k")
	const tries = 2 * observe.QueueSize // two events each, of which the end takes no room
	for range tries {
		_, err := l.TryLock(context.Background(), "k")
		require.ErrorIs(t, err, lock.ErrNotAcquired)
	}
	<-obs.entered
	mustUnlock(t, held)
	close(obs.unblock)
	require.NoError(t, l.Close())

	dropped := obs.rec.Of(observe.Dropped)
	require.Len(t, dropped, 1)
	delivered := len(obs.rec.Kinds(0)) - 1
	require.Equal(t, 2*tries, delivered+dropped[0].Count, "every event delivered or counted")
	require.Greater(t, delivered, observe.QueueSize-2, "the queue was full")
	// A full queue drops a call whole: every call begun has its end.
	ended := map[uint64]bool{}
	for _, e := range obs.rec.Of(observe.CallEnded) {
		ended[e.Call] = true
	}
	for _, e := range obs.rec.Of(observe.CallBegan) {
		require.True(t, ended[e.Call], "call %d began and never ended", e.Call)
	}
	require.Len(t, ended, delivered/2)
}

// panicking panics at every event.
type panicking struct{}

func (panicking) Observe(observe.Event) { panic("observer panics") }

func TestAPanickingObserverBreaksNothing(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			rec := &observing.Recorder{}
			l := open(t, srv, append(mode.opts, lock.WithObserver(panicking{}), lock.WithObserver(rec))...)
			other := open(t, srv, mode.opts...)
			require.NoError(t, handedOnceAsked(t, l, mustLock(t, other, "k"), rec))
			require.NoError(t, l.Close())
			require.Len(t, rec.Of(observe.LeaseEnded), 1, "the other observer is told everything")
		})
	}
}

func TestAReleaseThatSkipsADeadWaiterIsObserved(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name, func(t *testing.T) {
			srv := redistest.Start(t)
			holder, rec := openObserved(t, srv, modeOptions(mode.name, lock.WithTTL(time.Minute))...)
			live := open(t, srv, modeOptions(mode.name)...)
			held := mustLock(t, holder, "k")
			queueDeadWaiter(t, srv, mode.name)
			got := make(chan error, 1)
			go func() {
				ls, err := live.Lock(context.Background(), "k")
				if err == nil {
					err = ls.Unlock(context.Background())
				}
				got <- err
			}()
			if mode.name == "fair" {
				waitQueued(t, srv, 2)
			} else {
				redistest.Eventually(t, func() bool { return srv.Do(t, "LLEN", "baton:{k}:wanted").Int == 2 },
					10*time.Second, time.Millisecond, "the live waiter never asked")
			}
			mustUnlock(t, held)
			require.NoError(t, <-got)
			require.NoError(t, holder.Close())
			skipped := rec.Of(observe.WaitersSkipped)
			require.Len(t, skipped, 1)
			require.Equal(t, 1, skipped[0].Count)
			require.Equal(t, "k", skipped[0].Key)
		})
	}
}

func TestLeasesHeldLeaveTheQueueRoomForCalls(t *testing.T) {
	srv := redistest.Start(t)
	l, rec := openObserved(t, srv)
	// As many leases held at once as the queue has room for events: a
	// service with a lock per customer, held with a watchdog, has more.
	const held = observe.QueueSize
	for i := range held {
		mustLock(t, l, "k"+strconv.Itoa(i))
		if n := i + 1; n%256 == 0 {
			// Delivered so far: the queue is empty again.
			redistest.Eventually(t, func() bool { return len(rec.Of(observe.CallEnded)) == n },
				10*time.Second, time.Millisecond, "calls dropped from a queue with room, %d leases held", n)
		}
	}
	mustUnlock(t, mustLock(t, l, "one more"))
	require.NoError(t, l.Close())
	require.Empty(t, rec.Of(observe.Dropped))
	require.Len(t, rec.Of(observe.LeaseGranted), held+1)
	require.Len(t, rec.Of(observe.LeaseEnded), held+1)
}

func TestALeaseThatRunsOutWithAWatchdogThatNeverFailedExpired(t *testing.T) {
	srv := redistest.Start(t)
	// The watchdog's first extension is 20s away.
	l, rec := openObserved(t, srv, lock.WithTTL(time.Minute), lock.WithAutoExtend())
	ls := mustLock(t, l, "k")
	// A shorter TTL than the watchdog's pace: the lease runs out before
	// the watchdog tries, and nothing failed.
	require.NoError(t, ls.Extend(context.Background(), 50*time.Millisecond))
	<-ls.Done()
	require.NoError(t, l.Close())
	require.Empty(t, rec.Of(observe.ExtendFailed))
	require.Equal(t, observe.Expired, rec.Of(observe.LeaseEnded)[0].Reason)
}

func TestALockWhoseFirstAttemptFoundTheLockHeldIsObservedAsAfterWait(t *testing.T) {
	srv := redistest.Start(t)
	held := mustLock(t, open(t, srv), "k")
	var armed atomic.Bool
	var once sync.Once
	rec := &observing.Recorder{}
	l := open(t, srv, lock.WithObserver(rec), lock.WithConnOptions(conn.WithTap(func(dir conn.Direction, _ []byte) {
		if dir == conn.Read && armed.Load() {
			// The first attempt's reply, read before the Lock sees it:
			// the lock was held. It is let go before the next attempt.
			once.Do(func() { _, _ = srv.Server.Do("DEL", "baton:{k}") })
		}
	})))
	armed.Store(true)
	ls := mustLock(t, l, "k")
	require.NoError(t, l.Close())
	require.ErrorIs(t, held.Unlock(context.Background()), lock.ErrNotHeld)

	ended := rec.Of(observe.CallEnded)[0]
	require.Equal(t, ls.Token(), ended.Token)
	require.Equal(t, observe.AfterWait, ended.How, "the first attempt found the lock held, the second free")
	require.Equal(t, observe.AfterWait, rec.Of(observe.LeaseGranted)[0].How)
}

func TestAWatchdogRefusedByACloseUnderWayReportsNoFailure(t *testing.T) {
	srv := redistest.Start(t)
	l, rec := openObserved(t, srv, lock.WithTTL(90*time.Millisecond), lock.WithAutoExtend())
	mustLock(t, l, "held")
	// A call stuck on the paused server keeps Close waiting, while the
	// watchdog ticks several times: each extension is refused.
	srv.Do(t, "CLIENT", "PAUSE", "400", "ALL")
	stuck := make(chan error, 1)
	go func() {
		_, err := l.TryLock(context.Background(), "other")
		stuck <- err
	}()
	redistest.Eventually(t, func() bool { return len(rec.Of(observe.CallBegan)) == 2 },
		10*time.Second, time.Millisecond, "the second call never began")
	require.NoError(t, l.Close())
	<-stuck
	for _, e := range rec.Of(observe.ExtendFailed) {
		require.NotErrorIs(t, e.Err, lock.ErrClosed, "a refusal by Close reported as a failed extension")
	}
}
