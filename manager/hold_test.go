package manager_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

func TestHeldModifyIsOneWrite(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var writes [][]byte
	tap := conn.WithTap(func(dir conn.Direction, p []byte) {
		if dir == conn.Write && bytes.Contains(p, []byte("EVALSHA")) {
			mu.Lock()
			writes = append(writes, append([]byte(nil), p...))
			mu.Unlock()
		}
	})
	m := newManager(t, openLocker(t, srv, lock.WithConnOptions(tap)), manager.WithHold(5*time.Second))
	ctx := context.Background()
	require.NoError(t, m.Modify(ctx, "k", increment)) // acquires and holds
	mu.Lock()
	writes = nil
	mu.Unlock()
	for range 5 {
		require.NoError(t, m.Modify(ctx, "k", increment))
		// Every Modify has written before it returns.
	}
	mu.Lock()
	require.Equal(t, 5, len(writes), "one write per held Modify")
	mu.Unlock()
	require.JSONEq(t, `{"n":6}`, srv.Do(t, "GET", "baton:{k}:state").Str)
	require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{k}").Int, "still held")
}

func TestHoldEndsAfterItsTimeAndOnClose(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	m := newManager(t, openLocker(t, srv), manager.WithHold(500*time.Millisecond))
	require.NoError(t, m.Modify(ctx, "k", increment))
	require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{k}").Int)
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, 5*time.Millisecond)

	long := manager.New[counter](openLocker(t, srv), manager.WithHold(5*time.Second))
	require.NoError(t, long.Modify(ctx, "j", increment))
	require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{j}").Int)
	require.NoError(t, long.Close())
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{j}").Int)
	require.ErrorIs(t, long.Modify(ctx, "j", increment), manager.ErrClosed)
}

func TestAHolderYieldsToAnotherInstance(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			var opts []lock.Option
			if mode == "fair" {
				opts = append(opts, lock.WithFair())
			}
			ctx := context.Background()
			holder := newManager(t, openLocker(t, srv, opts...), manager.WithHold(5*time.Second))
			other := newManager(t, openLocker(t, srv, opts...))
			require.NoError(t, holder.Modify(ctx, "k", increment))
			start := time.Now()
			require.NoError(t, other.Modify(ctx, "k", increment))
			waited := time.Since(start)
			t.Logf("the other instance waited %v for a holder with a 5s hold", waited)
			require.Less(t, waited, time.Second)
			v, err := other.Get(ctx, "k")
			require.NoError(t, err)
			require.Equal(t, 2, v.N)
		})
	}
}

func TestHeldModifyErrorsReleaseAndWriteNothing(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := openLocker(t, srv)
	m := newManager(t, l, manager.WithHold(5*time.Second))
	require.NoError(t, m.Modify(ctx, "k", increment))
	require.PanicsWithValue(t, "no", func() { _ = m.Modify(ctx, "k", func(*counter) error { panic("no") }) })
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "a panic lets go")
	require.NoError(t, m.Modify(ctx, "k", increment))
	require.Error(t, m.Modify(ctx, "k", func(c *counter) error { c.N = 100; return context.Canceled }))
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "an error lets go")
	require.JSONEq(t, `{"n":2}`, srv.Do(t, "GET", "baton:{k}:state").Str)
}

func TestHoldWithABadDurationIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	m := manager.New[counter](openLocker(t, srv), manager.WithHold(-time.Second))
	require.ErrorIs(t, m.Modify(context.Background(), "k", increment), manager.ErrInvalid)
	m = manager.New[counter](openLocker(t, srv), manager.WithMaxStateSize(0))
	require.ErrorIs(t, m.Modify(context.Background(), "k", increment), manager.ErrInvalid)
}
