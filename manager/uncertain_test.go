package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// modifyPath is one way through Modify: without hold, the first Modify
// under hold (which acquires), and a Modify under hold that finds the
// lock held.
type modifyPath struct {
	name string
	hold time.Duration
	held bool
}

var modifyPaths = []modifyPath{
	{name: "no hold"},
	{name: "hold, first Modify", hold: time.Hour},
	{name: "hold, held Modify", hold: time.Hour, held: true},
}

// forEachPath runs test for every lock mode and Modify path, each with a
// Manager of its own on a flushed srv whose state for "k" is {"n":1}.
func forEachPath(t *testing.T, srv *redistest.Server, test func(t *testing.T, m *manager.Manager[counter])) {
	for _, mode := range []string{"fast", "fair"} {
		var lockOpts []lock.Option
		if mode == "fair" {
			lockOpts = append(lockOpts, lock.WithFair())
		}
		for _, p := range modifyPaths {
			t.Run(mode+"/"+p.name, func(t *testing.T) {
				srv.Do(t, "FLUSHALL")
				srv.Do(t, "SET", "baton:{k}:state", `{"n":1}`)
				m := newManager(t, openLocker(t, srv, lockOpts...), manager.WithHold(p.hold))
				if p.held {
					require.NoError(t, m.Modify(context.Background(), "k", func(*counter) error { return nil }))
					require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{k}").Int, "held")
				}
				test(t, m)
			})
		}
	}
}

// stateN is the counter stored for "k".
func stateN(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	var c counter
	require.NoError(t, json.Unmarshal([]byte(srv.Do(t, "GET", "baton:{k}:state").Str), &c))
	return c.N
}

// TestAWriteBackWhoseContextEndsInFlightIsUncertain: the server holds
// back writes (CLIENT PAUSE WRITE) for longer than Modify's context
// lasts, so the write-back is sent, and runs once the pause ends, after
// Modify's context ended. Modify must not say that nothing was written:
// an error that does not match conn.UncertainError (and is not nil) leaves
// the state as it was. Nor may Modify wait for the pause to end: the lock
// is let go in the background.
func TestAWriteBackWhoseContextEndsInFlightIsUncertain(t *testing.T) {
	srv := redistest.Start(t)
	forEachPath(t, srv, func(t *testing.T, m *manager.Manager[counter]) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := m.Modify(ctx, "k", func(c *counter) error {
			srv.Do(t, "CLIENT", "PAUSE", "300", "WRITE") // on a connection of its own
			c.N++
			return nil
		})
		took := time.Since(start)
		t.Logf("Modify returned after %v: %v", took, err)
		require.Less(t, took, 300*time.Millisecond, "Modify waited for the pause to end, past its context")
		// The pause is over once a write gets through, and the lock is
		// let go once the write-back (and release) ran.
		srv.Do(t, "SET", "pause-over", "1")
		redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond)
		n := stateN(t, srv)
		var uncertain *conn.UncertainError
		if err != nil && !errors.As(err, &uncertain) {
			require.Equal(t, 1, n, "Modify said nothing was written (%v), but the write-back landed", err)
		}
		require.NoError(t, m.Modify(context.Background(), "k", increment), "the Manager goes on")
		require.Equal(t, n+1, stateN(t, srv))
	})
}

// TestAWriteBackAfterFnCancelledCompletes: fn cancels Modify's context and
// returns nil. The write-back still happens, in the background, and the
// lock is let go; Modify returns nil or an error matching
// conn.UncertainError, on every path.
func TestAWriteBackAfterFnCancelledCompletes(t *testing.T) {
	srv := redistest.Start(t)
	forEachPath(t, srv, func(t *testing.T, m *manager.Manager[counter]) {
		ctx, cancel := context.WithCancel(context.Background())
		err := m.Modify(ctx, "k", func(c *counter) error { cancel(); c.N = 7; return nil })
		if err != nil {
			var uncertain *conn.UncertainError
			require.ErrorAs(t, err, &uncertain)
			require.ErrorIs(t, err, context.Canceled)
		}
		redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond)
		require.Equal(t, 7, stateN(t, srv))
		require.NoError(t, m.Modify(context.Background(), "k", increment), "the Manager goes on")
		require.Equal(t, 8, stateN(t, srv))
	})
}
