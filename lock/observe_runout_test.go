package lock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/observe"
)

// runOutTTL is the TTL of the leases these tests let run out, without
// asking for Done: nothing notices the deadline pass but what ends the
// lease afterwards.
const runOutTTL = 300 * time.Millisecond

// waitPastDeadline waits until the deadline of a lease that Lock just
// returned with runOutTTL has passed, with room to spare: the deadline is
// taken from before the acquire was sent, so twice the TTL after Lock
// returned is past it whatever the load.
func waitPastDeadline(t *testing.T, ls *lock.Lease) {
	t.Helper()
	time.Sleep(2 * runOutTTL)
	require.True(t, time.Now().After(lock.Deadline(ls)), "the deadline has passed")
}

// requireRanOut checks that rec saw ls end once, for want (Expired or
// ExtensionFailed), having been held from its grant to its deadline: the
// time it was actually held, not the time until whatever noticed.
func requireRanOut(t *testing.T, rec *observing.Recorder, ls *lock.Lease, want observe.Reason) {
	t.Helper()
	ended := rec.Of(observe.LeaseEnded)
	require.Len(t, ended, 1)
	require.Equal(t, want.String(), ended[0].Reason.String())
	require.Equal(t, ls.Token(), ended[0].Token)
	granted := rec.Of(observe.LeaseGranted)[0]
	require.Equal(t, lock.Deadline(ls).Sub(granted.Time), ended[0].Duration, "held from its grant to its deadline")
	require.Positive(t, ended[0].Duration)
}

func TestALeaseThatRanOutIsObservedAsExpiredHoweverItEnds(t *testing.T) {
	for _, mode := range lockModes {
		for _, end := range []struct {
			name string
			// end ends ls, whose deadline has passed, on l, and checks
			// what the caller is told.
			end func(t *testing.T, l *lock.Locker, ls *lock.Lease)
		}{
			{"unlocked", func(t *testing.T, _ *lock.Locker, ls *lock.Lease) {
				require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
			}},
			{"closed", func(*testing.T, *lock.Locker, *lock.Lease) {}},
			{"extended", func(t *testing.T, _ *lock.Locker, ls *lock.Lease) {
				require.ErrorIs(t, ls.Extend(context.Background(), time.Second), lock.ErrNotHeld)
			}},
			{"committed", func(t *testing.T, l *lock.Locker, ls *lock.Lease) {
				held, err := ls.Commit(context.Background(), lock.Write{Key: l.Key("k") + ":state", Value: "v", TTL: time.Minute})
				require.ErrorIs(t, err, lock.ErrNotHeld)
				require.False(t, held)
			}},
			{"committed with unlock", func(t *testing.T, l *lock.Locker, ls *lock.Lease) {
				_, err := ls.Commit(context.Background(), lock.Write{Key: l.Key("k") + ":state", Value: "v", TTL: time.Minute, Unlock: true})
				require.ErrorIs(t, err, lock.ErrNotHeld)
			}},
			{"Done asked late", func(t *testing.T, _ *lock.Locker, ls *lock.Lease) {
				select {
				case <-ls.Done():
				default:
					t.Fatal("Done asked after the deadline is open")
				}
			}},
		} {
			t.Run(mode.name+"/"+end.name, func(t *testing.T) {
				t.Parallel() // each waits for its lease to run out
				srv := redistest.Start(t)
				l, rec := openObserved(t, srv, append(mode.opts, lock.WithTTL(runOutTTL))...)
				ls := mustLock(t, l, "k")
				waitPastDeadline(t, ls)
				end.end(t, l, ls)
				require.NoError(t, l.Close())
				requireRanOut(t, rec, ls, observe.Expired)
			})
		}
	}
}

func TestOnlyALeaseHeldPastItsDeadlineIsObservedAsRunOut(t *testing.T) {
	t.Run("extended, then unlocked past the first deadline", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv, lock.WithTTL(500*time.Millisecond))
		ls := mustLock(t, l, "k")
		require.NoError(t, ls.Extend(context.Background(), 2*time.Second))
		first := time.Now().Add(500 * time.Millisecond) // later than the deadline Lock set
		time.Sleep(time.Second)
		require.True(t, time.Now().After(first))
		mustUnlock(t, ls) // 1s before the deadline the extension set
		require.NoError(t, l.Close())
		ended := rec.Of(observe.LeaseEnded)
		require.Len(t, ended, 1)
		require.Equal(t, observe.Released.String(), ended[0].Reason.String(), "let go in time: the extension moved the deadline")
		require.GreaterOrEqual(t, ended[0].Duration, time.Second, "held until the Unlock")
	})
	t.Run("extended, then run out at the later deadline", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv, lock.WithTTL(500*time.Millisecond))
		ls := mustLock(t, l, "k")
		require.NoError(t, ls.Extend(context.Background(), time.Second))
		time.Sleep(2 * time.Second)
		require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
		require.NoError(t, l.Close())
		requireRanOut(t, rec, ls, observe.Expired)
		require.Greater(t, rec.Of(observe.LeaseEnded)[0].Duration, 500*time.Millisecond, "held past the first deadline")
	})
	t.Run("unlock begun in time, its reply after the deadline", func(t *testing.T) {
		srv := redistest.Start(t)
		l, rec := openObserved(t, srv, lock.WithTTL(runOutTTL))
		ls := mustLock(t, l, "k")
		// The release waits on the paused server until well after the
		// lock has expired there: it finds the lock gone.
		srv.Do(t, "CLIENT", "PAUSE", "900", "ALL")
		require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
		require.True(t, time.Now().After(lock.Deadline(ls)), "the reply came after the deadline")
		require.NoError(t, l.Close())
		ended := rec.Of(observe.LeaseEnded)
		require.Len(t, ended, 1)
		require.Equal(t, observe.Released.String(), ended[0].Reason.String(), "the holder let go before the deadline")
		granted := rec.Of(observe.LeaseGranted)[0]
		require.Less(t, ended[0].Duration, lock.Deadline(ls).Sub(granted.Time))
	})
}

func TestAnUnlockAndACloseOfALeaseThatRanOutTellOneEnd(t *testing.T) {
	for _, mode := range lockModes {
		t.Run(mode.name+"/racing", func(t *testing.T) {
			srv := redistest.Start(t)
			l, rec := openObserved(t, srv, append(mode.opts, lock.WithTTL(runOutTTL))...)
			ls := mustLock(t, l, "k")
			waitPastDeadline(t, ls)
			unlocked := make(chan error, 1)
			go func() { unlocked <- ls.Unlock(context.Background()) }()
			require.NoError(t, l.Close())
			err := <-unlocked
			// Unlock entered first (the release found the lock gone), or
			// after Close had begun.
			if !errors.Is(err, lock.ErrClosed) {
				require.ErrorIs(t, err, lock.ErrNotHeld)
			}
			requireRanOut(t, rec, ls, observe.Expired)
		})
		t.Run(mode.name+"/unlock in flight", func(t *testing.T) {
			srv := redistest.Start(t)
			l, rec := openObserved(t, srv, append(mode.opts, lock.WithTTL(runOutTTL))...)
			ls := mustLock(t, l, "k")
			waitPastDeadline(t, ls)
			// The release waits on the paused server while Close
			// begins, and waits for it.
			srv.Do(t, "CLIENT", "PAUSE", "300", "ALL")
			unlocked := make(chan error, 1)
			go func() { unlocked <- ls.Unlock(context.Background()) }()
			redistest.Eventually(t, func() bool { return len(rec.Of(observe.LeaseEnded)) == 1 },
				10*time.Second, time.Millisecond, "the Unlock never ended the lease")
			require.NoError(t, l.Close())
			require.ErrorIs(t, <-unlocked, lock.ErrNotHeld)
			requireRanOut(t, rec, ls, observe.Expired)
		})
	}
}

func TestAWatchdogsLeaseThatRanOutUnwatchedIsObservedHeldToItsDeadline(t *testing.T) {
	srv := redistest.Start(t)
	l, rec := openObserved(t, srv, lock.WithTTL(runOutTTL), lock.WithAutoExtend())
	ls := mustLock(t, l, "k")
	// Every extension waits on the paused server past its pace, and
	// fails; nobody asked for Done, so the watchdog ends the lease.
	srv.Do(t, "CLIENT", "PAUSE", "1500", "WRITE")
	redistest.Eventually(t, func() bool { return len(rec.Of(observe.LeaseEnded)) == 1 },
		10*time.Second, time.Millisecond, "the lease never ended")
	require.NoError(t, l.Close())
	require.NotEmpty(t, rec.Of(observe.ExtendFailed))
	requireRanOut(t, rec, ls, observe.ExtensionFailed)
}

// syncBuffer is a bytes.Buffer that a log handler writes from the
// Locker's delivering goroutine while a test may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var records []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var r map[string]any
		require.NoError(t, dec.Decode(&r))
		records = append(records, r)
	}
	return records
}

func TestALeaseUnlockedAfterItRanOutIsLoggedAsAWarning(t *testing.T) {
	srv := redistest.Start(t)
	var out syncBuffer
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	l := open(t, srv, lock.WithTTL(runOutTTL), lock.WithLogger(logger))
	ls := mustLock(t, l, "k")
	waitPastDeadline(t, ls)
	require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
	require.NoError(t, l.Close())

	records := out.records(t)
	require.Len(t, records, 1)
	require.Equal(t, "baton: lease ended", records[0]["msg"])
	require.Equal(t, "WARN", records[0]["level"])
	require.Equal(t, "expired", records[0]["reason"])
	require.Equal(t, "k", records[0]["key"])
}
