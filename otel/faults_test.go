package batonotel_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

func TestAPausedServerLosesAWatchedLease(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	l := tm.open(t, srv, lock.WithTTL(300*time.Millisecond), lock.WithAutoExtend())
	ls, err := l.Lock(context.Background(), "k")
	require.NoError(t, err)
	// Every extension waits on the paused server until the lease has
	// run out.
	srv.Do(t, "CLIENT", "PAUSE", "1000", "WRITE")
	<-ls.Done()
	require.NoError(t, l.Close())

	c := tm.collect(t)
	require.EqualValues(t, 1, c.sum("baton.lock.leases.lost", reason("extension_failed")))
	require.EqualValues(t, 1, c.sum("baton.lock.leases.lost"))
	require.Positive(t, c.sum("baton.lock.extend.failures", mode("fast")))
	require.Zero(t, c.sum("baton.lock.leases.held"))
}

// deadWaiterEnv, set to a server's address, makes the test binary a
// process that waits in line for the fair lock "k" there until it is
// killed (see TestMain).
const deadWaiterEnv = "BATON_OTEL_DEAD_WAITER"

// waitInLine is the test binary as a fair waiter for "k" at addr; it
// returns only if the Lock does.
func waitInLine(addr string) int {
	l, err := lock.Open(context.Background(), addr, lock.WithFair())
	if err != nil {
		return 2
	}
	_, _ = l.Lock(context.Background(), "k")
	return 3
}

func TestADeadFairWaiterIsCountedAsSkipped(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	holder := tm.open(t, srv, lock.WithFair(), lock.WithTTL(time.Minute))
	held, err := holder.Lock(context.Background(), "k")
	require.NoError(t, err)
	subscribers := func() int {
		return strings.Count(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub").Str, "\n")
	}
	before := subscribers()

	// A process that queues for the lock and is killed: its place stays,
	// and nobody hears its channel.
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), deadWaiterEnv+"="+srv.Addr)
	require.NoError(t, child.Start())
	queued := func(n int64) func() bool {
		return func() bool { return srv.Do(t, "ZCARD", "baton:{k}:queue").Int == n }
	}
	require.Eventually(t, queued(1), 30*time.Second, 5*time.Millisecond, "the other process never queued")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.Eventually(t, func() bool { return subscribers() == before }, 10*time.Second, 5*time.Millisecond,
		"the server still sees the killed process subscribed")

	live := open(t, srv, lock.WithFair())
	got := make(chan error, 1)
	go func() {
		ls, err := live.Lock(context.Background(), "k")
		if err == nil {
			err = ls.Unlock(context.Background())
		}
		got <- err
	}()
	require.Eventually(t, queued(2), 10*time.Second, 5*time.Millisecond, "the live waiter never queued")
	require.NoError(t, held.Unlock(context.Background()))
	require.NoError(t, <-got)
	require.NoError(t, holder.Close())

	c := tm.collect(t)
	require.EqualValues(t, 1, c.sum("baton.lock.release.skipped_waiters", mode("fair")))
}
