package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// TestEveryAcceptedKeyKeepsItsLockInOneSlot runs every script of both
// modes, on a one-node Redis Cluster, for keys with braces in every place
// a user might put them: a script whose keys fell into two slots would
// fail with CROSSSLOT.
func TestEveryAcceptedKeyKeepsItsLockInOneSlot(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster())
	keys := []string{"a", "x}y", "{a}", "a{b}c", "{", "{}", "a}", "{{", "x}{", "k{"}
	ctx := context.Background()
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			opts := modeOptions(mode, lock.WithTTL(time.Second))
			holder, waiter := open(t, srv, opts...), open(t, srv, opts...)
			for _, key := range keys {
				ls, err := holder.Lock(ctx, key)
				require.NoError(t, err, key)
				require.NoError(t, ls.Extend(ctx, time.Second), key)
				// A waiter asks (fast) or queues (fair), and is handed the
				// lock by a write-back.
				got := lockAndUnlock(waiter, key)
				waitForRequest(t, srv, mode, key)
				_, err = ls.Commit(ctx, lock.Write{Key: "baton:{" + key + "}:state", Value: "v", TTL: time.Minute})
				require.NoError(t, err, key)
				require.NoError(t, <-got, key)
			}
		})
	}
}

// lockAndUnlock takes key's lock on l and lets it go, in a goroutine, and
// sends the outcome on the channel it returns.
func lockAndUnlock(l *lock.Locker, key string) <-chan error {
	got := make(chan error, 1)
	go func() {
		ctx := context.Background()
		ls, err := l.Lock(ctx, key)
		if err == nil {
			err = ls.Unlock(ctx)
		}
		got <- err
	}()
	return got
}

// waitForRequest returns once a waiter for key has asked for it.
func waitForRequest(t *testing.T, srv *redistest.Server, mode, key string) {
	t.Helper()
	asked := func() bool {
		if mode == "fair" {
			return srv.Do(t, "ZCARD", "baton:{"+key+"}:queue").Int > 0
		}
		return srv.Do(t, "EXISTS", "baton:{"+key+"}:wanted").Int > 0
	}
	redistest.Eventually(t, asked, 5*time.Second, time.Millisecond, "no request for %q", key)
}

// TestAnAcquireSentTwiceFindsItsOwnLock: the cluster client sends a batch
// again, whole, when a command after the first is refused for now
// (TRYAGAIN here), and the acquire script that leads a LockAndDo batch
// then runs a second time, with the same owner and the same "first
// attempt" arguments. Its first run took the lock: the second must find
// it the claim's own and acquire, rather than take it for another's (a
// fair claim would queue behind its own lock, and hold it until its next
// renewal, and its queue entry would outlive its lease).
func TestAnAcquireSentTwiceFindsItsOwnLock(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster())
	for _, mode := range clusterModes {
		t.Run(mode, func(t *testing.T) {
			key := "again-" + mode
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			l, err := lock.Open(ctx, "redis+cluster://"+srv.Addr, clusterModeOptions(mode)...)
			require.NoError(t, err)
			defer func() { require.NoError(t, l.Close()) }()
			// A Lock first, so that the node has the script: the batch's
			// first send runs it, rather than answer NOSCRIPT.
			warm, err := l.Lock(ctx, "warm-up")
			require.NoError(t, err)
			require.NoError(t, warm.Unlock(ctx))
			refusedOnce := []string{"EVAL", "if redis.call('INCR', KEYS[1]) == 1 then return redis.error_reply('TRYAGAIN for the test') end return 'ok'",
				"1", l.Key(key) + ":n"}

			ls, replies, err := l.LockAndDo(ctx, key, refusedOnce)
			require.NoError(t, err)
			require.Equal(t, "2", srv.Do(t, "GET", l.Key(key)+":n").Str, "the batch was sent twice")
			require.Equal(t, "ok", replies[0].Str)
			require.Zero(t, srv.Do(t, "ZCARD", l.Key(key)+":queue").Int, "a holder is not queued")
			require.NoError(t, ls.Unlock(ctx))
			require.Zero(t, srv.Do(t, "EXISTS", l.Key(key)).Int, "the lock is free after Unlock, offered to no one")
		})
	}
}
