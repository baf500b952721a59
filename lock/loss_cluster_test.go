package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// A lease on a Redis Cluster is watched on the node that serves its slot,
// and follows the slot when it moves with the key: no false alarm, and a
// loss on the new node ends the lease as on the old.
func TestALeaseIsWatchedWhereItsSlotMoves(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	bothModes(t, func(t *testing.T, mode string) {
		key := "moving-" + mode
		slot := cluster.Slot("baton:{" + key + "}")
		home := c.Primary(t, slot)
		l := openOnCluster(t, c, 1, modeOptions(mode, lock.WithTTL(time.Minute))...)[0]
		ls := mustLock(t, l, key)
		ctx := ls.Context(context.Background())
		awaitTracked(t, home)

		to := otherPrimary(t, c, slot)
		c.MigrateSlot(t, slot, to)
		awaitTracked(t, to)
		requireHeldFor(t, ctx, 200*time.Millisecond, "a slot moved with its key")

		start := time.Now()
		to.Do(t, "DEL", "baton:{"+key+"}")
		t.Logf("Done closed %v after a DEL on the slot's new node", awaitEnd(t, ctx, start))
		require.ErrorIs(t, context.Cause(ctx), lock.ErrRemoved)
	})
}

// A failover to a replica that lacks the lock ends the lease once the
// cluster has promoted it, for ErrVanished: the node that watched the lock
// is gone, and the lease looks for the slot's new primary.
func TestALeaseLostInAClusterFailoverEnds(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	primary, replica := c.Nodes()[0], c.Nodes()[3]
	l := openOnCluster(t, c, 1, lock.WithTTL(time.Minute))[0]
	key := keyOn(t, c, primary, "failover-")
	// The replica never receives the lock: frozen, its link cut, as in
	// TestFencingTokensIncreaseAcrossAFailover.
	replica.Pause(t, 3*time.Second)
	require.Equal(t, int64(1), primary.Do(t, "CLIENT", "KILL", "TYPE", "replica").Int)
	ls := mustLock(t, l, key)
	ctx := ls.Context(context.Background())
	awaitTracked(t, primary)

	killed := time.Now()
	c.Kill(t, primary)
	c.WaitHealthy(t, 15*time.Second)
	promoted := time.Since(killed)
	took := awaitEnd(t, ctx, killed)
	t.Logf("failover took %v; Done closed %v after the kill", promoted.Round(time.Millisecond), took.Round(time.Millisecond))
	require.ErrorIs(t, context.Cause(ctx), lock.ErrVanished)
}
