package lock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// outcome is what a Lock in a goroutine came to, and when.
type outcome struct {
	lease *lock.Lease
	err   error
	at    time.Time
}

// lockInBackground calls Lock under ctx in a goroutine and sends what it
// came to on the channel it returns.
func lockInBackground(ctx context.Context, l *lock.Locker, key string) <-chan outcome {
	got := make(chan outcome, 1)
	go func() {
		ls, err := l.Lock(ctx, key)
		got <- outcome{ls, err, time.Now()}
	}()
	return got
}

// holderAndWaiter has one Locker on c take key's lock (TTL 20s) and
// another wait for it (a 20s context), and returns once the waiter has
// asked: the holder's lease, what the waiter's Lock comes to, and the
// primary that serves key now.
func holderAndWaiter(t *testing.T, c *redistest.Cluster, mode, key string) (*lock.Lease, <-chan outcome, *redistest.Server) {
	t.Helper()
	home := c.Primary(t, cluster.Slot("baton:{"+key+"}"))
	lockers := openOnCluster(t, c, 2, modeOptions(mode, lock.WithTTL(20*time.Second))...)
	held, err := lockers[0].Lock(context.Background(), key)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	got := lockInBackground(waitCtx, lockers[1], key)
	waitForRequest(t, home, mode, key)
	return held, got, home
}

// otherPrimary returns a primary of c other than the one serving slot.
func otherPrimary(t *testing.T, c *redistest.Cluster, slot int) *redistest.Server {
	t.Helper()
	serving := c.Primary(t, slot)
	for _, n := range c.Nodes() {
		if n.Addr != serving.Addr && n.Do(t, "ROLE").Elems[0].Str == "master" {
			return n
		}
	}
	t.Fatal("no other primary")
	return nil
}

// TestALongReshardStrandsNoLock: while a lock's slot is open for
// migration, Redis answers TRYAGAIN to a script whose declared keys are
// partly missing there, for as long as the slot stays open (a reshard of
// a slot with many keys keeps it open for seconds). A waiting Lock waits
// through it for as long as its context allows, and an Unlock sent
// during it completes: the waiter gets the lock once the reshard ends,
// not when the holder's TTL runs out.
func TestALongReshardStrandsNoLock(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	const open = 1500 * time.Millisecond
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			key := "reshard-" + mode
			slot := cluster.Slot("baton:{" + key + "}")
			held, got, _ := holderAndWaiter(t, c, mode, key)
			to := otherPrimary(t, c, slot)

			released := make(chan error, 1)
			go func() {
				time.Sleep(open / 3)
				released <- held.Unlock(ctx)
			}()
			start := time.Now()
			c.MigrateSlotSlowly(t, slot, to, open)
			moved := time.Now()
			require.NoError(t, <-released, "the Unlock sent while the slot was open")
			r := <-got
			require.NoError(t, r.err, "the Lock waiting through the reshard")
			t.Logf("%s: the reshard took %v; the waiter had the lock %v after it",
				mode, moved.Sub(start).Round(time.Millisecond), r.at.Sub(moved).Round(time.Millisecond))
			require.Less(t, r.at.Sub(moved), 5*time.Second, "the waiter was not left to the holder's TTL (20s)")
			require.NoError(t, r.lease.Unlock(ctx))
		})
	}
}

// TestAFailoverElsewhereStrandsNoLock: with the default
// cluster-require-full-coverage, every node answers CLUSTERDOWN between a
// primary's death and its replica's promotion, for locks on healthy
// primaries too. An Unlock in that window completes once the cluster is
// back, within the release timeout, and a Lock waiting through it gets
// the lock then, not when the holder's TTL runs out.
func TestAFailoverElsewhereStrandsNoLock(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			c := redistest.StartCluster(t, 3, 1)
			key := "failover-" + mode
			slot := cluster.Slot("baton:{" + key + "}")
			held, got, home := holderAndWaiter(t, c, mode, key)

			victim := otherPrimary(t, c, slot)
			killed := time.Now()
			c.Kill(t, victim)
			redistest.Eventually(t, func() bool {
				return strings.Contains(home.Do(t, "CLUSTER", "INFO").Str, "cluster_state:fail")
			}, 15*time.Second, 5*time.Millisecond, "the cluster never went down")
			down := time.Now()
			released := make(chan error, 1)
			go func() { released <- held.Unlock(ctx) }()
			c.WaitHealthy(t, 15*time.Second)
			healthy := time.Now()
			require.NoError(t, <-released, "the Unlock sent while the cluster was down")
			r := <-got
			require.NoError(t, r.err, "the Lock waiting through the failover")
			t.Logf("%s: down %v after the kill, healthy %v later; the waiter had the lock %v after that",
				mode, down.Sub(killed).Round(time.Millisecond), healthy.Sub(down).Round(time.Millisecond), r.at.Sub(healthy).Round(time.Millisecond))
			require.Less(t, r.at.Sub(healthy), 5*time.Second, "the waiter was not left to the holder's TTL (20s)")
			require.NoError(t, r.lease.Unlock(ctx))
		})
	}
}

// TestFairOrderSurvivesAMovedSlot: a fair waiter whose slot moves to
// another node is woken, follows the slot, and renews its place with the
// new node's channel at once; a release soon after the move hands the
// lock to it, not to one who arrived after the move.
func TestFairOrderSurvivesAMovedSlot(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	const key = "moved-fair"
	slot := cluster.Slot("baton:{" + key + "}")
	from, to := c.Primary(t, slot), otherPrimary(t, c, slot)
	lockers := openOnCluster(t, c, 3, lock.WithFair(), lock.WithTTL(20*time.Second))
	held, err := lockers[0].Lock(ctx, key)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	first := lockInBackground(waitCtx, lockers[1], key)
	waitForRequest(t, from, "fair", key)

	c.MigrateSlot(t, slot, to)
	second := lockInBackground(waitCtx, lockers[2], key)
	redistest.Eventually(t, func() bool {
		return to.Do(t, "ZCARD", "baton:{"+key+"}:queue").Int == 2
	}, 5*time.Second, time.Millisecond, "the second waiter never queued")
	time.Sleep(400 * time.Millisecond)
	require.NoError(t, held.Unlock(ctx))

	var r outcome
	select {
	case r = <-first:
		require.NoError(t, r.err)
	case r = <-second:
		require.NoError(t, r.err)
		require.NoError(t, r.lease.Unlock(ctx))
		t.Fatal("the waiter who arrived after the move was served first")
	}
	require.NoError(t, r.lease.Unlock(ctx))
	r = <-second
	require.NoError(t, r.err)
	require.NoError(t, r.lease.Unlock(ctx))
}

// TestAManualFailoverStrandsNoLock: CLUSTER FAILOVER on the replica of a
// lock's primary, as an operator does before maintenance. The old
// primary holds its clients' writes until the replica has caught up and
// taken over, then answers MOVED; an Unlock sent meanwhile completes on
// the new primary, the waiter gets the lock then, and its fencing token
// is above the holder's.
func TestAManualFailoverStrandsNoLock(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			c := redistest.StartCluster(t, 3, 1)
			key := "manual-" + mode
			held, got, home := holderAndWaiter(t, c, mode, key)
			var replica *redistest.Server
			for i, n := range c.Nodes()[:3] {
				if n.Addr == home.Addr {
					replica = c.Nodes()[3+i]
				}
			}
			require.Equal(t, "OK", replica.Do(t, "CLUSTER", "FAILOVER").Str)
			released := make(chan error, 1)
			go func() { released <- held.Unlock(ctx) }()
			redistest.Eventually(t, func() bool {
				return replica.Do(t, "ROLE").Elems[0].Str == "master"
			}, 15*time.Second, 5*time.Millisecond, "the replica never took over")
			promoted := time.Now()
			require.NoError(t, <-released, "the Unlock sent during the failover")
			r := <-got
			require.NoError(t, r.err, "the Lock waiting through the failover")
			t.Logf("%s: the waiter had the lock %v after the replica said it had taken over",
				mode, r.at.Sub(promoted).Round(time.Millisecond))
			require.Less(t, r.at.Sub(promoted), 5*time.Second, "the waiter was not left to the holder's TTL (20s)")
			require.Greater(t, r.lease.Token(), held.Token())
			require.NoError(t, r.lease.Unlock(ctx))
		})
	}
}
