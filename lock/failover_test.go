package lock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
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

// TestNoReleaseIsLostToAFailover: the primary of a lock's slot dies
// around its release, and the release still frees the lock once the
// replica serves the slot, not when the TTL (20s) runs out. The replica is
// frozen and its link cut beforehand, so that it holds every lock but
// hears of no release. Three releases per mode:
//   - sent before the kill, under WithReplicaAck: unacknowledged, so it
//     is sent again until it is, and a resend deletes the lock the
//     failover brought back;
//   - in flight at the kill (waiting for WAIT's acknowledgement), its
//     connection broken under it;
//   - sent after the kill, without WithReplicaAck, to a primary that
//     refuses the dial until the replica takes over.
//
// Each Unlock reports what it knows: the first two a conn.UncertainError
// matching ErrReplicaAck (the new primary has no replica left to
// acknowledge), the last nil.
func TestNoReleaseIsLostToAFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	primary, replica := c.Nodes()[0], c.Nodes()[3]
	const releaseTimeout = 10 * time.Second
	type release struct {
		name, mode, key string
		lease           *lock.Lease
		acked           bool
		start           func() // sends the Unlock in a goroutine
		took            time.Duration
		err             error
		done            chan struct{}
	}
	var releases []*release
	for _, mode := range []string{"fast", "fair"} {
		for _, r := range []struct {
			name string
			opts []lock.Option
		}{
			{"before the kill", []lock.Option{lock.WithReplicaAck(1, 200*time.Millisecond)}},
			{"in flight", []lock.Option{lock.WithReplicaAck(1, time.Second)}},
			{"after the kill", nil},
		} {
			l, err := lock.Open(ctx, clusterURL(c), modeOptions(mode, append(r.opts,
				lock.WithTTL(20*time.Second), lock.WithReleaseTimeout(releaseTimeout))...)...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			rel := &release{name: r.name, mode: mode, key: keyOn(t, c, primary, mode+"-"+strings.ReplaceAll(r.name, " ", "-")),
				acked: r.opts != nil, done: make(chan struct{})}
			rel.lease, err = l.Lock(ctx, rel.key)
			require.NoError(t, err, "acknowledged while the replica answers")
			rel.start = func() {
				go func() {
					defer close(rel.done)
					start := time.Now()
					rel.err = rel.lease.Unlock(ctx)
					rel.took = time.Since(start)
				}()
			}
			releases = append(releases, rel)
		}
	}
	replica.Pause(t, 3*time.Second)
	require.Equal(t, int64(1), primary.Do(t, "CLIENT", "KILL", "TYPE", "replica").Int)
	for _, r := range releases {
		if r.name == "before the kill" {
			r.start()
			select {
			case <-r.done:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s, released before the kill: Unlock still waiting for an acknowledgement due in 200ms", r.mode)
			}
		}
	}
	for _, r := range releases {
		if r.name == "in flight" {
			r.start()
			// Released on the primary, and waiting for WAIT.
			redistest.Eventually(t, func() bool { return primary.Do(t, "EXISTS", "baton:{"+r.key+"}").Int == 0 },
				time.Second, time.Millisecond, "%s %s", r.mode, r.name)
		}
	}
	c.Kill(t, primary)
	for _, r := range releases {
		if r.name == "after the kill" {
			r.start()
		}
	}
	c.WaitHealthy(t, 15*time.Second)
	healthy := time.Now()
	require.Equal(t, replica.Addr, c.Primary(t, cluster.Slot("baton:{"+releases[0].key+"}")).Addr)

	seconds := map[string]*lock.Locker{}
	for _, mode := range []string{"fast", "fair"} {
		l, err := lock.Open(ctx, clusterURL(c), modeOptions(mode)...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		seconds[mode] = l
	}
	// Each lock is looked at until it is free, or for half its TTL: a
	// release lost to the failover would leave it held for all of it.
	free := map[*release]time.Duration{}
	for time.Since(healthy) < 10*time.Second && len(free) < len(releases) {
		for _, r := range releases {
			if _, ok := free[r]; ok {
				continue
			}
			if ls, err := seconds[r.mode].TryLock(ctx, r.key); err == nil {
				free[r] = time.Since(healthy)
				require.NoError(t, ls.Unlock(ctx))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range releases {
		select {
		case <-r.done:
		case <-time.After(releaseTimeout + 2*time.Second):
			t.Fatalf("%s, released %s: Unlock still waiting past its release timeout", r.mode, r.name)
		}
		t.Logf("%s, released %s: Unlock returned after %v: %v", r.mode, r.name, r.took.Round(time.Millisecond), r.err)
		took, ok := free[r]
		require.True(t, ok, "%s, released %s: still held 10s after the cluster was healthy again", r.mode, r.name)
		t.Logf("%s, released %s: free %v after the cluster was healthy again", r.mode, r.name, took.Round(time.Millisecond))
		if !r.acked {
			require.NoError(t, r.err, "%s, released %s", r.mode, r.name)
			continue
		}
		require.ErrorIs(t, r.err, lock.ErrReplicaAck, "%s, released %s: no replica acknowledged it", r.mode, r.name)
		var uncertain *conn.UncertainError
		require.ErrorAs(t, r.err, &uncertain, "%s, released %s: a failover may not keep it", r.mode, r.name)
	}
}
