package lock_test

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

const queuedWaiterAddr = "BATON_QUEUED_WAITER_ADDR"

// TestQueuedWaiterProcess is a fair waiter that queues for "k" and never
// gets to leave: the parent test kills it.
func TestQueuedWaiterProcess(t *testing.T) {
	addr := os.Getenv(queuedWaiterAddr)
	if addr == "" {
		t.Skip("the killed waiter of TestFairKilledWaiterDoesNotStallTheQueue")
	}
	l, err := lock.Open(context.Background(), addr, lock.WithFair(),
		lock.WithQueueLease(300*time.Millisecond), lock.WithTTL(500*time.Millisecond))
	require.NoError(t, err)
	_, err = l.Lock(context.Background(), "k")
	require.NoError(t, err)
	select {} // hold until killed
}

// startQueuedWaiter runs TestQueuedWaiterProcess and returns once it is
// queued for "k".
func startQueuedWaiter(t *testing.T, srv *redistest.Server) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestQueuedWaiterProcess$")
	child.Env = append(os.Environ(), queuedWaiterAddr+"="+srv.Addr)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	require.Eventually(t, func() bool { return queueLen(t, srv, "k") == 1 }, 10*time.Second, time.Millisecond)
	return child
}

// queueBehindAKilledWaiter holds "k", queues a waiter in a child process
// and then one more (made with otherOpts) behind it, and kills the child.
// It returns the holder's lease and a channel that tells when the last
// waiter got the lock.
func queueBehindAKilledWaiter(t *testing.T, otherOpts ...lock.Option) (*lock.Lease, <-chan time.Time) {
	t.Helper()
	srv := redistest.Start(t)
	holder := open(t, srv, lock.WithFair(), lock.WithTTL(time.Minute))
	other := open(t, srv, append([]lock.Option{lock.WithFair()}, otherOpts...)...)
	held := mustLock(t, holder, "k")
	child := startQueuedWaiter(t, srv)
	got := make(chan time.Time, 1)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // before the Lockers close
	wg.Go(func() {
		ls := mustLock(t, other, "k")
		got <- time.Now()
		mustUnlock(t, ls)
	})
	require.Eventually(t, func() bool { return queueLen(t, srv, "k") == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, child.Process.Kill())
	return held, got
}

func TestFairKilledWaiterDoesNotStallTheQueue(t *testing.T) {
	t.Run("skipped at hand-off once its queue lease ran out", func(t *testing.T) {
		held, got := queueBehindAKilledWaiter(t)
		time.Sleep(400 * time.Millisecond) // past the dead waiter's 300ms queue lease
		released := time.Now()
		mustUnlock(t, held)
		// Straight from the release: the dead head is skipped.
		require.Less(t, (<-got).Sub(released), 300*time.Millisecond)
	})
	t.Run("handed the lock as it died, it holds it no longer than its TTL", func(t *testing.T) {
		held, got := queueBehindAKilledWaiter(t, lock.WithQueueLease(300*time.Millisecond))
		released := time.Now()
		mustUnlock(t, held) // the dead waiter's entry is still live: it gets the lock
		// Its 500ms TTL, then the next re-check (every 100ms).
		waited := (<-got).Sub(released)
		t.Logf("the next waiter got the lock %v after the hand-off to the dead one", waited)
		require.Less(t, waited, 500*time.Millisecond+300*time.Millisecond)
	})
}
