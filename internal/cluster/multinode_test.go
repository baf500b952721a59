package cluster_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// incrScript increments a counter under a key's hash tag, as the lock's
// scripts touch only keys of one tag.
const incrScript = "return redis.call('INCR', KEYS[1])"

// TestARealClusterFollowsMigrationAndFailover runs PING + EVAL batches on
// keys spread over every primary of a 3+3 cluster while a slot moves (the
// client meets ASK, then MOVED) and while a primary dies and its replica
// takes over: every batch reaches the key's owner, and no increment is
// lost or doubled by the redirects.
func TestARealClusterFollowsMigrationAndFailover(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	var seeds []string
	for _, n := range c.Nodes() {
		seeds = append(seeds, n.Addr)
	}
	client := newClient(t, seeds)
	ctx := testContext(t)

	keys := make([]string, 48)
	owners := map[string]bool{}
	for i := range keys {
		keys[i] = fmt.Sprintf("{k%d}:n", i)
		owners[c.Primary(t, cluster.Slot(keys[i])).Addr] = true
	}
	require.Len(t, owners, 3, "the keys cover every primary")

	increment := func(key string) {
		replies, err := client.DoMulti(ctx, key, []string{"PING"}, []string{"EVAL", incrScript, "1", key})
		require.NoError(t, err, key)
		require.Equal(t, "PONG", replies[0].Str)
		require.NoError(t, replies[1].Err(), key)
	}
	want := map[string]int64{}
	round := func() {
		for _, key := range keys {
			increment(key)
			want[key]++
		}
	}
	round()

	// A slot moves while the client keeps using it.
	moved := keys[0]
	slot := cluster.Slot(moved)
	from := c.Primary(t, slot)
	var to *redistest.Server
	for _, n := range c.Nodes()[:3] {
		if n.Addr != from.Addr {
			to = n
			break
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var during int64
	var unknown error // an outcome the count could not account for
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := client.Do(ctx, moved, "EVAL", incrScript, "1", moved)
			var serverErr *resp.Error
			switch {
			case err == nil:
				during++
			case errors.As(err, &serverErr): // the script did not run
			default:
				unknown = err
				return
			}
		}
	})
	c.MigrateSlot(t, slot, to)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	require.NoError(t, unknown)
	want[moved] += during
	require.Equal(t, to.Addr, c.Primary(t, slot).Addr)
	round()

	// A primary dies; its replica is promoted.
	victim := c.Primary(t, cluster.Slot(keys[1]))
	// Replication is asynchronous: only what the replica has can
	// survive the primary.
	require.Equal(t, int64(1), victim.Do(t, "WAIT", "1", "5000").Int)
	c.Kill(t, victim)
	c.WaitHealthy(t, 15*time.Second)
	round()

	for _, key := range keys {
		v, err := client.Do(ctx, key, "GET", key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(want[key]), v.Str, key)
	}
	t.Logf("%d increments on the migrating slot while it moved", during)
}
