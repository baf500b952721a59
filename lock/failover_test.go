package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// TestFencingTokensIncreaseAcrossAFailover hands out tokens on a cluster
// primary while its replica is frozen, kills the primary, and takes the
// lock again on the replica once it is promoted, without a single fencing
// counter: the new token is still larger than every old one, in both
// modes. A counter alone would start again at 1; the tokens' seed, the
// server's clock in microseconds, covers the gap, as long as the failover
// takes longer than the two nodes' clocks differ (here they are one
// machine's). This is the assumption the README states.
func TestFencingTokensIncreaseAcrossAFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	// Two keys that live on the same primary, one per mode.
	keys := map[string]string{"fast": "f"}
	slot := cluster.Slot("baton:{f}")
	primary := c.Primary(t, slot)
	for i := 0; keys["fair"] == ""; i++ {
		key := "q" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		if c.Primary(t, cluster.Slot("baton:{"+key+"}")).Addr == primary.Addr {
			keys["fair"] = key
		}
	}
	modes := map[string][]lock.Option{"fast": nil, "fair": {lock.WithFair()}}
	// The primary's replica is frozen, and its link cut, while the tokens
	// are handed out and still when the primary dies, so that it lacks
	// every one of them: the worst a failover can do. (Frozen alone, it
	// would read them from its socket's buffer once thawed.)
	var replica *redistest.Server
	for i, n := range c.Nodes()[:3] {
		if n.Addr == primary.Addr {
			replica = c.Nodes()[3+i]
		}
	}
	replica.Pause(t, 3*time.Second)
	require.Equal(t, int64(1), primary.Do(t, "CLIENT", "KILL", "TYPE", "replica").Int)

	last := map[string]uint64{}
	for mode, key := range keys {
		l, err := lock.Open(ctx, primary.Addr, modes[mode]...)
		require.NoError(t, err)
		for range 200 {
			lease, err := l.Lock(ctx, key)
			require.NoError(t, err)
			require.Greater(t, lease.Token(), last[mode])
			last[mode] = lease.Token()
			require.NoError(t, lease.Unlock(ctx))
		}
		require.NoError(t, l.Close())
	}

	killed := time.Now()
	c.Kill(t, primary)
	c.WaitHealthy(t, 15*time.Second)
	promoted := c.Primary(t, slot)
	require.Equal(t, replica.Addr, promoted.Addr)
	t.Logf("failover took %v", time.Since(killed).Round(time.Millisecond))
	for _, key := range keys {
		require.True(t, promoted.Do(t, "GET", "baton:{"+key+"}:fence").IsNull(), "the promoted replica never got the counter")
	}

	for mode, key := range keys {
		l, err := lock.Open(ctx, promoted.Addr, modes[mode]...)
		require.NoError(t, err)
		lease, err := l.Lock(ctx, key)
		require.NoError(t, err)
		t.Logf("%s: last token on the old primary %d, first on the promoted replica %d (+%d)", mode, last[mode], lease.Token(), lease.Token()-last[mode])
		require.Greater(t, lease.Token(), last[mode])
		require.NoError(t, lease.Unlock(ctx))
		require.NoError(t, l.Close())
	}
}

// TestAFailoverLosesAnUnacknowledgedLockOnly shows what WithReplicaAck is
// for, in both modes. A primary's replica is frozen and its link cut: a
// Locker without the option still acquires there, and one with it is
// refused with ErrReplicaAck. A lock acquired with the option before the
// freeze, while the replica acknowledged, is held still after the primary
// dies and the replica takes over; the unacknowledged one is gone, and a
// second owner takes it while the first lease has seconds left: two
// holders, which is what replication without acknowledgement allows.
func TestAFailoverLosesAnUnacknowledgedLockOnly(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	primary := c.Nodes()[0]
	replica := c.Nodes()[3]
	// One mode's Lockers, with and without the option, and its keys.
	type locks struct {
		plain, acked *lock.Locker
		kept         string      // acquired with acknowledgement, before the freeze
		lostKey      string      // acquired without acknowledgement, during it
		lost         *lock.Lease // lostKey's lease
		refKey       string      // refused for want of acknowledgement
	}
	openLocker := func(opts ...lock.Option) *lock.Locker {
		l, err := lock.Open(ctx, clusterURL(c), append(opts, lock.WithTTL(20*time.Second))...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	modes := map[string]*locks{}
	for _, mode := range []string{"fast", "fair"} {
		m := &locks{
			plain:   openLocker(modeOptions(mode)...),
			acked:   openLocker(modeOptions(mode, lock.WithReplicaAck(1, 200*time.Millisecond))...),
			kept:    keyOn(t, c, primary, "kept-"+mode),
			lostKey: keyOn(t, c, primary, "lost-"+mode),
			refKey:  keyOn(t, c, primary, "refused-"+mode),
		}
		_, err := m.acked.Lock(ctx, m.kept)
		require.NoError(t, err)
		modes[mode] = m
	}

	replica.Pause(t, 3*time.Second)
	require.Equal(t, int64(1), primary.Do(t, "CLIENT", "KILL", "TYPE", "replica").Int)
	for _, m := range modes {
		var err error
		m.lost, err = m.plain.Lock(ctx, m.lostKey)
		require.NoError(t, err)
		_, err = m.acked.Lock(ctx, m.refKey)
		require.ErrorIs(t, err, lock.ErrReplicaAck)
	}
	c.Kill(t, primary)
	c.WaitHealthy(t, 15*time.Second)
	require.Equal(t, replica.Addr, c.Primary(t, cluster.Slot("baton:{"+modes["fast"].kept+"}")).Addr)

	for mode, m := range modes {
		second := openLocker(modeOptions(mode)...)
		_, err := second.TryLock(ctx, m.kept)
		require.ErrorIs(t, err, lock.ErrNotAcquired, "%s: the acknowledged lock survived the failover", mode)
		ls, err := second.TryLock(ctx, m.lostKey)
		require.NoError(t, err, "%s: the unacknowledged lock was lost with the primary", mode)
		left := time.Until(lock.Deadline(m.lost))
		require.Greater(t, left, time.Second, "%s: while its first lease still runs", mode)
		t.Logf("%s: a second owner took the unacknowledged lock with %v left on the first lease", mode, left.Round(time.Millisecond))
		require.NoError(t, ls.Unlock(ctx))
	}
}
