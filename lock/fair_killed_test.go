package lock_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

const queuedWaiterAddr = "BATON_QUEUED_WAITER_ADDR"

// TestQueuedWaiterProcess is a fair waiter, with the default options,
// that queues for "k" and never gets to leave: the parent test kills it.
func TestQueuedWaiterProcess(t *testing.T) {
	addr := os.Getenv(queuedWaiterAddr)
	if addr == "" {
		t.Skip("a killed waiter of TestFairKilledWaitersDoNotStallTheQueue")
	}
	l, err := lock.Open(context.Background(), addr, lock.WithFair())
	require.NoError(t, err)
	_, err = l.Lock(context.Background(), "k")
	require.NoError(t, err)
	select {} // hold until killed
}

// startQueuedWaiter runs TestQueuedWaiterProcess and returns once it is
// queued for "k" behind queued others.
func startQueuedWaiter(t *testing.T, srv *redistest.Server, queued int64) *exec.Cmd {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^TestQueuedWaiterProcess$")
	child.Env = append(os.Environ(), queuedWaiterAddr+"="+srv.Addr)
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	})
	waitQueued(t, srv, queued+1)
	return child
}

func waitQueued(t *testing.T, srv *redistest.Server, n int64) {
	t.Helper()
	redistest.Eventually(t, func() bool { return queueLen(t, srv, "k") == n }, 10*time.Second, time.Millisecond, "never %d queued", n)
}

// maxHandOffPastTheDead is how soon after the release the next live
// waiter must hold the lock, however many waiters before it died, once
// the server has seen their subscribe connections end: the release skips
// them and hands the lock to the live waiter, which holds it from the
// hand-off's message. A process that dies with the release already
// running is taken for alive, and holds the lock for the releaser's TTL,
// as a holder that dies does; the test waits for the server to see the
// deaths, so that this bound does not depend on that race.
const maxHandOffPastTheDead = time.Second

// TestFairKilledWaitersDoNotStallTheQueue queues waiters in child
// processes ahead of a live one, kills them while their queue entries are
// still live (the default queue lease is 3s), and releases: the release
// skips every dead waiter, whose process no longer hears its channel.
func TestFairKilledWaitersDoNotStallTheQueue(t *testing.T) {
	for _, dead := range []int{1, 3} {
		t.Run(strconv.Itoa(dead)+" dead", func(t *testing.T) {
			srv := redistest.Start(t)
			holder := open(t, srv, lock.WithFair(), lock.WithTTL(time.Minute))
			live := open(t, srv, lock.WithFair())
			held := mustLock(t, holder, "k")
			var children []*exec.Cmd
			for i := range dead {
				children = append(children, startQueuedWaiter(t, srv, int64(i)))
			}
			got := make(chan time.Time, 1)
			errs := make(chan error, 1)     // the Lock's
			unlocked := make(chan error, 1) // the Unlock's, once it held
			go func() {
				ls, err := live.Lock(context.Background(), "k")
				if err != nil {
					errs <- err
					return
				}
				got <- time.Now()
				unlocked <- ls.Unlock(context.Background())
			}()
			waitQueued(t, srv, int64(dead+1))
			var channels []string // the children's, where their hand-offs reach them
			for _, w := range fairQueue(t, srv, "k", dead) {
				channels = append(channels, w.channel)
			}
			for _, child := range children {
				require.NoError(t, child.Process.Kill())
				_, _ = child.Process.Wait()
			}
			for _, ch := range channels {
				redistest.Eventually(t, func() bool { return srv.Do(t, "PUBSUB", "NUMSUB", ch).Elems[1].Int == 0 },
					5*time.Second, time.Millisecond, "the server still counts a subscriber of the dead waiter's channel %s", ch)
			}
			released := time.Now()
			mustUnlock(t, held)
			select {
			case at := <-got:
				waited := at.Sub(released)
				t.Logf("dead=%d the live waiter held the lock %v after the release", dead, waited)
				require.Less(t, waited, maxHandOffPastTheDead)
			case err := <-errs:
				t.Fatalf("the live waiter failed: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("the live waiter never got the lock")
			}
			require.NoError(t, <-unlocked)
		})
	}
}
