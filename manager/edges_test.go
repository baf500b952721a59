package manager_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// slowReads delays every read of the connection while on is set.
func slowReads(on *atomic.Bool, d time.Duration) lock.Option {
	return lock.WithConnOptions(conn.WithTap(func(dir conn.Direction, _ []byte) {
		if dir == conn.Read && on.Load() {
			time.Sleep(d)
		}
	}))
}

// TestAHeldWriteThatLandedIsNotReportedLost: a held Modify's write-back
// runs in Redis while the lock is valid there, but its reply comes after
// the lease's local deadline. The server's reply decides: the write
// landed, so Modify succeeds, and a caller that retries on ErrNotHeld
// applies each change once.
func TestAHeldWriteThatLandedIsNotReportedLost(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 200 * time.Millisecond
	var slow atomic.Bool
	m := newManager(t, openLocker(t, srv, lock.WithTTL(ttl), slowReads(&slow, ttl)), manager.WithHold(time.Hour))
	ctx := context.Background()
	reported := 0
	for i := range 20 {
		require.NoError(t, m.Modify(ctx, "k", increment), "iteration %d", i) // acquires and holds
		time.Sleep(ttl / 2)
		slow.Store(true) // the next write's reply lands after the deadline
		for {
			err := m.Modify(ctx, "k", increment)
			if err == nil {
				break
			}
			require.ErrorIs(t, err, lock.ErrNotHeld, "retried, as a caller would")
			reported++
		}
		slow.Store(false)
		_, err := m.Get(ctx, "k") // the connection's reads are prompt again
		require.NoError(t, err)
		redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond)
	}
	v, err := m.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 40, v.N, "every increment applied once (%d reported lost)", reported)
}

func TestAHoldNeverServesStaleState(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for name, lose := range map[string]func(m *manager.Manager[counter]){
		"deleted": func(m *manager.Manager[counter]) { srv.Do(t, "DEL", m.Key("k")) },
		"expired": func(m *manager.Manager[counter]) {
			srv.Do(t, "PEXPIRE", m.Key("k"), "1")
			time.Sleep(20 * time.Millisecond)
		},
		"ran its TTL": func(*manager.Manager[counter]) { time.Sleep(150 * time.Millisecond) },
	} {
		t.Run(name, func(t *testing.T) {
			for _, mode := range [][]lock.Option{nil, {lock.WithFair()}} {
				srv.Do(t, "FLUSHALL")
				m := newManager(t, openLocker(t, srv, mode...), manager.WithHold(time.Hour), manager.WithStateTTL(100*time.Millisecond))
				for range 41 {
					require.NoError(t, m.Modify(ctx, "k", increment))
				}
				lose(m)
				var seen int
				require.NoError(t, m.Modify(ctx, "k", func(c *counter) error { seen = c.N; c.N++; return nil }))
				require.Zero(t, seen, "missing state reaches fn as the zero value")
				require.JSONEq(t, `{"n":1}`, srv.Do(t, "GET", m.Key("k")).Str)
				require.NoError(t, m.Close())
			}
		})
	}
}

type blob struct{ Data string }

func TestAStateTooLargeToReadBackIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	m := manager.New[blob](openLocker(t, srv), manager.WithMaxStateSize(1000))
	t.Cleanup(func() { _ = m.Close() })
	require.NoError(t, m.Modify(ctx, "k", func(b *blob) error { b.Data = "small"; return nil }))
	err := m.Modify(ctx, "k", func(b *blob) error { b.Data = strings.Repeat("x", 2000); return nil })
	require.ErrorIs(t, err, manager.ErrInvalid)
	v, err := m.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "small", v.Data, "nothing written")
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock was released")
	require.False(t, errors.Is(m.Modify(ctx, "k", func(b *blob) error { b.Data = "ok"; return nil }), manager.ErrInvalid))
}
