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

// A fair waiter whose renewal is refused with an error that says the
// script never ran (a server still loading its data) returns the error
// from Lock, and leaves the queue all the same, with a release of its
// claim: an earlier attempt queued it, and its process still listens, so
// an entry left behind would be handed the next release's lock, held
// then for the releaser's TTL by a claim nobody has.
func TestAFairWaiterWhoseRenewalIsRefusedLeavesTheQueue(t *testing.T) {
	srv := redistest.Start(t)
	var acquires, releases atomic.Int32
	l := onFake(t, srv, func(_ int32, cmd []string) string {
		switch {
		case cmd[0] == "PING":
			return "+PONG\r\n"
		case fairScript(cmd) == fairAcquire:
			if acquires.Add(1) == 1 {
				return "*3\r\n:0\r\n:10000\r\n:5\r\n" // queued
			}
			return "-LOADING Redis is loading the dataset in memory\r\n"
		case fairScript(cmd) == fairRelease:
			releases.Add(1)
			return ":0\r\n"
		}
		return ":0\r\n"
	}, lock.WithFair(), lock.WithQueueLease(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ls, err := l.Lock(ctx, "k")
	require.Nil(t, ls)
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the refusal, not the context, ended the Lock")
	t.Logf("Lock returned: %v", err)
	require.Equal(t, int32(2), acquires.Load(), "queued, then refused at the renewal")
	redistest.Eventually(t, func() bool { return releases.Load() > 0 }, 5*time.Second, time.Millisecond,
		"the claim that gave up never left the queue")
}
