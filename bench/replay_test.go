package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// TestAReplayDoesWhatModifyDid replays a recorded Modify of each mode.
// Every replay writes the recorded state again, so the counter stays
// where the recording left it; and a lock that another owner holds makes
// the replay fail, rather than time a Modify that did nothing.
func TestAReplayDoesWhatModifyDid(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	for _, mode := range []struct {
		name string
		fair bool
	}{{"fast", false}, {"fair", true}} {
		t.Run(mode.name, func(t *testing.T) {
			key := "replay-" + mode.name
			m, err := openModifyReplay(mode.fair)(ctx, addr, key)
			require.NoError(t, err)
			defer m.Close()
			require.Len(t, m.(*replayModifier).writes, modifyWrites)

			opts := []lock.Option{lock.WithTTL(lockTTL)}
			if mode.fair {
				opts = append(opts, lock.WithFair())
			}
			l, err := lock.Open(ctx, addr, opts...)
			require.NoError(t, err)
			defer l.Close()
			stateKey := manager.New[counter](l).Key(key)
			recorded, err := admin.Get(ctx, stateKey).Result()
			require.NoError(t, err)
			for range 5 {
				require.NoError(t, m.Modify(ctx, key))
			}
			state, err := admin.Get(ctx, stateKey).Result()
			require.NoError(t, err)
			require.Equal(t, recorded, state, "the recorded state, written again")

			lease, err := l.Lock(ctx, key)
			require.NoError(t, err)
			require.ErrorIs(t, m.Modify(ctx, key), errReplayDiffers, "a replay that took no lock")
			require.NoError(t, lease.Unlock(ctx))
		})
	}
}
