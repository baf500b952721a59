package lock_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

func TestWithReplicaAckChecksItsValues(t *testing.T) {
	srv := redistest.Start(t)
	for _, tt := range []struct {
		name    string
		n       int
		timeout time.Duration
		ok      bool
	}{
		{"off", 0, 0, true},
		{"one replica", 1, time.Millisecond, true},
		{"negative count", -1, time.Second, false},
		{"no timeout", 1, 0, false},
		{"under a millisecond", 1, time.Microsecond, false},
		{"negative timeout", 1, -time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := lock.Open(context.Background(), srv.Addr, lock.WithReplicaAck(tt.n, tt.timeout))
			if tt.ok {
				require.NoError(t, err)
				require.NoError(t, l.Close())
				return
			}
			require.ErrorIs(t, err, lock.ErrInvalid)
		})
	}
}

// TestReplicaAckIsNoFreeLunchOnAServerWithoutReplicas: with no replica
// to acknowledge, every acquire fails with ErrReplicaAck after the
// timeout, in both modes, and leaves the lock free.
func TestReplicaAckIsNoFreeLunchOnAServerWithoutReplicas(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			l := open(t, srv, modeOptions(mode, lock.WithReplicaAck(1, 20*time.Millisecond))...)
			start := time.Now()
			_, err := l.Lock(ctx, "alone")
			require.ErrorIs(t, err, lock.ErrReplicaAck)
			require.ErrorIs(t, err, lock.ErrNotAcquired, "undone: not acquired")
			require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
			redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{alone}").Int == 0 }, time.Second, time.Millisecond)
			_, err = l.TryLock(ctx, "alone")
			require.ErrorIs(t, err, lock.ErrReplicaAck)
			require.ErrorIs(t, err, lock.ErrNotAcquired, "undone: not acquired")
		})
	}
}

// writeLog keeps every write a connection made.
type writeLog struct {
	mu     sync.Mutex
	writes [][]byte
}

func (w *writeLog) tap(dir conn.Direction, p []byte) {
	if dir != conn.Write {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
}

// scripts returns how many writes held a script call, and how many of
// those ended with wait.
func (w *writeLog) scripts(wait []byte) (scripts, waited int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.writes {
		if bytes.Contains(p, []byte("EVAL")) {
			scripts++
			if bytes.HasSuffix(p, wait) {
				waited++
			}
		}
	}
	return scripts, waited
}

// TestReplicaAckOnACluster runs both modes on a cluster whose primaries
// have a replica each. While the replica answers, every acquire,
// extension and write-back is acknowledged, its WAIT ending the very write
// that carries its script. While it is frozen, an acquire fails with
// ErrReplicaAck and is undone; an extension fails and leaves the lease's
// deadline; a write-back and a release are reported uncertain.
func TestReplicaAckOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	ctx := context.Background()
	wait := resp.AppendCommand(nil, "WAIT", "1", "300")
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			key := "acked-" + mode
			var wire writeLog
			l, err := lock.Open(ctx, clusterURL(c), modeOptions(mode,
				lock.WithReplicaAck(1, 300*time.Millisecond), lock.WithConnOptions(conn.WithTap(wire.tap)))...)
			require.NoError(t, err)
			defer l.Close()
			state := lock.Write{Key: "baton:{" + key + "}:state", Value: "v", TTL: time.Minute}

			ls, err := l.Lock(ctx, key)
			require.NoError(t, err)
			require.NoError(t, ls.Extend(ctx, 10*time.Second))
			held, err := ls.Commit(ctx, state)
			require.NoError(t, err)
			require.True(t, held)
			// Each script is sent again as EVAL where the node answers
			// NOSCRIPT, so 3 or more writes.
			scripts, waited := wire.scripts(wait)
			require.GreaterOrEqual(t, scripts, 3)
			require.Equal(t, scripts, waited, "the acquire, the extension and the write-back each ended with the WAIT")

			primary := c.Primary(t, cluster.Slot("baton:{"+key+"}"))
			replica := c.Nodes()[3+nodeIndex(t, c, primary)]
			released := keyOn(t, c, primary, "released-"+mode)
			toRelease, err := l.Lock(ctx, released)
			require.NoError(t, err)
			replica.Pause(t, 3*time.Second)
			deadline := lock.Deadline(ls)
			err = ls.Extend(ctx, 10*time.Second)
			require.ErrorIs(t, err, lock.ErrReplicaAck)
			var extendUncertain *conn.UncertainError
			require.ErrorAs(t, err, &extendUncertain, "on the primary, perhaps not after a failover")
			require.Equal(t, deadline, lock.Deadline(ls), "an unacknowledged extension leaves the deadline")
			_, err = ls.Commit(ctx, state)
			var uncertain *conn.UncertainError
			require.ErrorAs(t, err, &uncertain)
			require.ErrorIs(t, err, lock.ErrReplicaAck)

			other := keyOn(t, c, primary, "other-"+mode)
			_, err = l.Lock(ctx, other)
			require.ErrorIs(t, err, lock.ErrReplicaAck)
			require.ErrorIs(t, err, lock.ErrNotAcquired)
			redistest.Eventually(t, func() bool {
				return c.Primary(t, cluster.Slot("baton:{"+other+"}")).Do(t, "EXISTS", "baton:{"+other+"}").Int == 0
			}, time.Second, time.Millisecond)

			start := time.Now()
			err = toRelease.Unlock(ctx)
			require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "a release waits for the replicas too")
			require.ErrorIs(t, err, lock.ErrReplicaAck)
			var releaseUncertain *conn.UncertainError
			require.ErrorAs(t, err, &releaseUncertain, "released on the primary, perhaps not after a failover")
			require.Equal(t, int64(0), primary.Do(t, "EXISTS", "baton:{"+released+"}").Int)
		})
	}
}

// nodeIndex is s's place among c's nodes.
func nodeIndex(t *testing.T, c *redistest.Cluster, s *redistest.Server) int {
	t.Helper()
	for i, n := range c.Nodes() {
		if n == s {
			return i
		}
	}
	t.Fatalf("%s is not a node of the cluster", s.Addr)
	return -1
}

// keyOn returns a key whose lock lives on s, named prefix and a number.
func keyOn(t *testing.T, c *redistest.Cluster, s *redistest.Server, prefix string) string {
	t.Helper()
	for i := range 10000 {
		key := prefix + strconv.Itoa(i)
		if c.Primary(t, cluster.Slot("baton:{"+key+"}")) == s {
			return key
		}
	}
	t.Fatalf("no key with prefix %q lives on %s", prefix, s.Addr)
	return ""
}

// A Locker that closes sends its releases that too few replicas
// acknowledged again, within the release timeout, rather than leave them
// to a failover that would bring the lock back: Close's own release of a
// lease still held, and an Unlock's that went on in the background.
func TestCloseSendsAnUnacknowledgedReleaseAgain(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			l, _, replica := openAckedByAReplica(t, mode)
			ctx := context.Background()
			held, err := l.Lock(ctx, "held")
			require.NoError(t, err)
			left, err := l.Lock(ctx, "left")
			require.NoError(t, err)

			const frozen = 2500 * time.Millisecond
			replica.Pause(t, frozen)
			began := time.Now()
			// An Unlock whose caller leaves: the release goes on in the
			// background, and Close waits for it.
			gone, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			err = left.Unlock(gone)
			cancel()
			var uncertain *conn.UncertainError
			require.ErrorAs(t, err, &uncertain)
			require.NoError(t, l.Close(), "every release was acknowledged in the end")
			require.GreaterOrEqual(t, time.Since(began), frozen-200*time.Millisecond, "Close waited for the replica")
			require.ErrorIs(t, held.Unlock(ctx), lock.ErrClosed, "Close released it")
			for _, key := range []string{"held", "left"} {
				require.Zero(t, replica.Do(t, "EXISTS", "baton:{"+key+"}").Int, "%s released on the replica", key)
			}
		})
	}
}

// A release that finds the lock not held on a primary too few replicas
// follow has no verdict: a primary failed over that still answers says
// that of a lock that stands on the new one. Its Unlock is uncertain,
// not ErrNotHeld, and the release is sent again until acknowledged.
func TestNotHeldFromAPrimaryTooFewReplicasFollowIsUncertain(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			l, primary, replica := openAckedByAReplica(t, mode)
			ctx := context.Background()
			defer l.Close()
			ls, err := l.Lock(ctx, "k")
			require.NoError(t, err)

			replica.Pause(t, 3*time.Second)
			primary.Do(t, "DEL", "baton:{k}") // gone from this node alone
			err = ls.Unlock(ctx)
			require.NotErrorIs(t, err, lock.ErrNotHeld)
			var uncertain *conn.UncertainError
			require.ErrorAs(t, err, &uncertain)
			require.ErrorIs(t, err, lock.ErrReplicaAck)

			// With the replica back, the same verdict is acknowledged.
			replica.Resume()
			again, err := l.Lock(ctx, "again")
			require.NoError(t, err)
			primary.Do(t, "DEL", "baton:{again}")
			require.ErrorIs(t, again.Unlock(ctx), lock.ErrNotHeld)
		})
	}
}

// openAckedByAReplica starts a primary and a replica of it, waits until
// the replica acknowledges a write (WAIT), which it may not yet do for a
// moment after its link is up, and opens a Locker in mode on the primary
// whose writes wait for the replica's acknowledgement, for up to a
// second. The caller closes it.
func openAckedByAReplica(t *testing.T, mode string) (l *lock.Locker, primary, replica *redistest.Server) {
	t.Helper()
	primary = redistest.Start(t, redistest.WithConfig("repl-diskless-sync-delay 0"))
	replica = redistest.Start(t, redistest.WithConfig("replicaof 127.0.0.1 "+strings.TrimPrefix(primary.Addr, "127.0.0.1:")))
	c, err := conn.Dial(context.Background(), primary.Addr)
	require.NoError(t, err)
	defer c.Close()
	redistest.Eventually(t, func() bool {
		// On one connection: WAIT counts the acknowledgements of its
		// own last write.
		v, err := c.DoMulti(context.Background(), []string{"SET", "acked", "1"}, []string{"WAIT", "1", "100"})
		return err == nil && v[1].Int == 1
	}, 30*time.Second, 10*time.Millisecond, "the replica never acknowledged a write")
	primary.Do(t, "DEL", "acked")
	l, err = lock.Open(context.Background(), primary.Addr, modeOptions(mode, lock.WithReplicaAck(1, time.Second))...)
	require.NoError(t, err)
	return l, primary, replica
}
