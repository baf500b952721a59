package lock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cmdstats"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// TestTheServersWorkPerUncontendedLockAndUnlock counts the commands the
// server runs for one Lock and Unlock of a free lock, those inside the
// scripts included, from INFO commandstats: what each costs a
// single-threaded server. Fast mode: EVALSHA, SET NX, GET and SET of the
// fencing counter, TIME; then PING, EVALSHA, GET, LPOP of the requests,
// DEL. Fair mode: EVALSHA, SET NX, EXISTS of the queue, GET and SET of
// the counter, TIME; then PING, EVALSHA, GET, ZRANGE of the queue, DEL. A change that
// adds a call to either path shows here first.
func TestTheServersWorkPerUncontendedLockAndUnlock(t *testing.T) {
	for _, c := range []struct {
		mode  string
		opts  []lock.Option
		calls map[string]int64
	}{
		{"fast", nil, map[string]int64{"evalsha": 2, "set": 2, "get": 1, "time": 1, "ping": 1, "lpop": 1, "del": 1}},
		{"fair", []lock.Option{lock.WithFair()}, map[string]int64{"evalsha": 2, "set": 2, "get": 1, "exists": 1, "time": 1, "zrange": 1, "ping": 1, "del": 1}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			srv := redistest.Start(t)
			l := open(t, srv, c.opts...)
			ctx := context.Background()
			lockAndUnlock := func() {
				ls, err := l.Lock(ctx, "k")
				require.NoError(t, err)
				require.NoError(t, ls.Unlock(ctx))
			}
			lockAndUnlock() // the scripts are loaded, the connection is up
			const rounds = 10
			before := commandStats(t, srv)
			for range rounds {
				lockAndUnlock()
			}
			delta, err := cmdstats.Delta(before, commandStats(t, srv))
			require.NoError(t, err)
			delete(delta, "info")
			perRound := map[string]int64{}
			for name, counters := range delta {
				require.Zero(t, counters.Calls%rounds, "%s ran %d times in %d rounds", name, counters.Calls, rounds)
				perRound[name] = counters.Calls / rounds
			}
			require.Equal(t, c.calls, perRound)
		})
	}
}

func commandStats(t *testing.T, srv *redistest.Server) cmdstats.Stats {
	t.Helper()
	stats, err := cmdstats.Parse(srv.Do(t, "INFO", "commandstats").Str)
	require.NoError(t, err)
	return stats
}
