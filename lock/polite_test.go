package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// The keys of the lock "k" under the default prefix.
const (
	politeLockKey   = "baton:{k}"
	politeWantedKey = "baton:{k}:wanted"
	politeNextKey   = "baton:{k}:next"
)

type politeResult struct {
	lease   *lock.Lease
	replies []resp.Value
	err     error
}

// lockPolitely runs LockThenPolitely in a goroutine; its result arrives on
// the channel returned.
func lockPolitely(ctx context.Context, l *lock.Locker, cmds ...[]string) <-chan politeResult {
	done := make(chan politeResult, 1)
	go func() {
		ls, replies, err := l.LockThenPolitely(ctx, "k", cmds...)
		done <- politeResult{ls, replies, err}
	}()
	return done
}

// askWhileHeld leaves the lock free with a request standing: the waiter
// "asker" asks while another owner holds the lock, which is then released.
func askWhileHeld(t *testing.T, srv *redistest.Server, asker *lock.Locker) {
	t.Helper()
	holder := mustLock(t, open(t, srv), "k")
	_, err := lock.TryLockAs(context.Background(), asker, "k", "asker")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.Equal(t, "asker", srv.Do(t, "GET", politeWantedKey).Str)
	mustUnlock(t, holder)
}

func TestPoliteOwnerLetsTheAskerGoFirst(t *testing.T) {
	srv := redistest.Start(t)
	asker := open(t, srv)
	polite := open(t, srv, lock.WithPoliteGrace(time.Minute))
	askWhileHeld(t, srv, asker)
	srv.Do(t, "SET", "state", "v")

	done := lockPolitely(context.Background(), polite, []string{"GET", "state"})
	// The polite owner waits next in line, leaving the free lock alone.
	require.Eventually(t, func() bool { return srv.Do(t, "EXISTS", politeNextKey).Int == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeLockKey).Int)
	politeOwner := srv.Do(t, "GET", politeNextKey).Str

	// The asker comes, and on acquiring finds itself asked in turn.
	ls, err := lock.TryLockAs(context.Background(), asker, "k", "asker")
	require.NoError(t, err)
	require.Equal(t, politeOwner, srv.Do(t, "GET", politeWantedKey).Str)
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeNextKey).Int)
	wanted, err := ls.ExtendSetting(context.Background(), "baton:{k}:state", "x", time.Minute, false)
	require.NoError(t, err)
	require.True(t, wanted)
	select {
	case r := <-done:
		t.Fatalf("the polite owner acquired while the asker held the lock: %+v", r)
	default:
	}

	mustUnlock(t, ls)
	r := <-done
	require.NoError(t, r.err)
	require.Greater(t, r.lease.Token(), ls.Token())
	require.Equal(t, "v", r.replies[0].Str)
	// Its own request was answered by acquiring.
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeWantedKey, politeNextKey).Int)
	mustUnlock(t, r.lease)
}

func TestPoliteOwnerTakesTheLockAfterTheGrace(t *testing.T) {
	srv := redistest.Start(t)
	const grace = 50 * time.Millisecond
	polite := open(t, srv, lock.WithPoliteGrace(grace))
	askWhileHeld(t, srv, open(t, srv)) // and the asker never comes

	start := time.Now()
	r := <-lockPolitely(context.Background(), polite)
	require.NoError(t, r.err)
	require.GreaterOrEqual(t, time.Since(start), grace)
	// The request of the waiter that never came is dropped with the
	// polite owner's place in line: the holder is not asked to let go.
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeWantedKey, politeNextKey).Int)
	mustUnlock(t, r.lease)
}

func TestPoliteOwnerWithNoRequestStandingTakesTheLockAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	polite := open(t, srv, lock.WithPoliteGrace(time.Minute))
	r := <-lockPolitely(context.Background(), polite)
	require.NoError(t, r.err)
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeWantedKey, politeNextKey).Int)
	mustUnlock(t, r.lease)
}

func TestPlainLockTakesAFreeLockDespiteARequest(t *testing.T) {
	srv := redistest.Start(t)
	askWhileHeld(t, srv, open(t, srv))
	ls, err := open(t, srv).TryLock(context.Background(), "k")
	require.NoError(t, err)
	// The request still stands: the asker has not been served.
	require.Equal(t, "asker", srv.Do(t, "GET", politeWantedKey).Str)
	mustUnlock(t, ls)
}

func TestWaiterThatGivesUpWithdrawsItsRequest(t *testing.T) {
	srv := redistest.Start(t)
	holder := mustLock(t, open(t, srv), "k")
	waiter := open(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := waiter.Lock(ctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { return srv.Do(t, "EXISTS", politeWantedKey).Int == 0 }, 5*time.Second, time.Millisecond)
	mustUnlock(t, holder)
}

func TestPoliteOwnerThatGivesUpLeavesTheRequestStanding(t *testing.T) {
	srv := redistest.Start(t)
	polite := open(t, srv, lock.WithPoliteGrace(time.Minute))
	askWhileHeld(t, srv, open(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	done := lockPolitely(ctx, polite)
	require.Eventually(t, func() bool { return srv.Do(t, "EXISTS", politeNextKey).Int == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	r := <-done
	require.True(t, errors.Is(r.err, context.Canceled), "%v", r.err)
	require.Eventually(t, func() bool { return srv.Do(t, "EXISTS", politeNextKey).Int == 0 }, 5*time.Second, time.Millisecond)
	require.Equal(t, "asker", srv.Do(t, "GET", politeWantedKey).Str)
}

func TestPoliteGraceMustNotBeNegative(t *testing.T) {
	_, err := lock.Open(context.Background(), "127.0.0.1:1", lock.WithPoliteGrace(-time.Second))
	require.ErrorIs(t, err, lock.ErrInvalid)
}

func TestPoliteGraceOfZeroIsPlain(t *testing.T) {
	srv := redistest.Start(t)
	polite := open(t, srv, lock.WithPoliteGrace(0))
	askWhileHeld(t, srv, open(t, srv))
	r := <-lockPolitely(context.Background(), polite)
	require.NoError(t, r.err)
	require.Equal(t, int64(0), srv.Do(t, "EXISTS", politeNextKey).Int)
	require.Equal(t, "asker", srv.Do(t, "GET", politeWantedKey).Str)
	mustUnlock(t, r.lease)
}
