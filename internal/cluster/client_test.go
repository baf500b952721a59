package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// releaseScript deletes KEYS[1] if it holds ARGV[1] and bumps KEYS[2], the
// shape of the lock's release: a compare-and-delete on keys of one tag.
const releaseScript = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	return redis.call("INCR", KEYS[2])
end
return 0`

// TestRealClusterEval runs the lock's kind of batch, PING and an EVAL on
// keys of one hash tag, on a real one-node cluster, over RESP2 and RESP3.
func TestRealClusterEval(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster())
	for _, tt := range []struct {
		name string
		opts []conn.Option
	}{
		{"RESP2", nil},
		{"RESP3", []conn.Option{conn.WithRESP3()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, []string{srv.Addr}, cluster.WithConnOptions(tt.opts...))
			ctx := testContext(t)
			require.Equal(t, srv.Addr, c.SlotOwner(0))
			require.Equal(t, srv.Addr, c.SlotOwner(16383))

			key, fence := "{lock:"+tt.name+"}", "{lock:"+tt.name+"}:fence"
			_, err := c.Do(ctx, key, "SET", key, "token", "PX", "10000")
			require.NoError(t, err)
			replies, err := c.DoMulti(ctx, key,
				[]string{"PING"},
				[]string{"EVAL", releaseScript, "2", key, fence, "token"})
			require.NoError(t, err)
			require.Equal(t, "PONG", replies[0].Str)
			require.NoError(t, replies[1].Err())
			require.Equal(t, int64(1), replies[1].Int)

			v, err := c.Do(ctx, key, "EXISTS", key)
			require.NoError(t, err)
			require.Zero(t, v.Int)

			// Keys of two slots in one script: the server refuses it, and
			// the reply is the caller's.
			v, err = c.Do(ctx, key, "EVAL", releaseScript, "2", key, "other", "token")
			require.ErrorIs(t, err, resp.Prefix("CROSSSLOT"))
			require.Equal(t, resp.ErrorReply, v.Type)

			n, err := c.Node(ctx, key)
			require.NoError(t, err)
			v, err = n.Do(ctx, "GET", fence)
			require.NoError(t, err)
			require.Equal(t, "1", v.Str)
		})
	}
}

// TestSeedsWithTheFirstDead: New goes past seeds that do not answer.
func TestSeedsWithTheFirstDead(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster())
	c := newClient(t, []string{redistest.ClosedAddr(t), redistest.ClosedAddr(t), srv.Addr})
	v, err := c.Do(testContext(t), "k", "SET", "k", "v")
	require.NoError(t, err)
	require.Equal(t, "OK", v.Str)
}

// TestSeedsWithTheFirstDeadOnFakes does the same against fake nodes, with
// no redis-server needed, and checks who was asked.
func TestSeedsWithTheFirstDeadOnFakes(t *testing.T) {
	a := startNode(t)
	a.setScript(func([]string) string { return allSlotsTo(t, a.Addr) })
	dead := redistest.ClosedAddr(t)
	c := newClient(t, []string{dead, a.Addr, a.Addr})
	require.Equal(t, a.Addr, c.SlotOwner(100))
	require.Equal(t, []string{"CLUSTER SHARDS"}, a.commands())
}

func TestNewFails(t *testing.T) {
	dead := redistest.ClosedAddr(t)
	tests := []struct {
		name  string
		seeds []string
	}{
		{"no seeds", nil},
		{"a seed without a port", []string{"127.0.0.1"}},
		{"a seed with a bad port", []string{"127.0.0.1:99999"}},
		{"a URL for a seed", []string{"redis://127.0.0.1:6379"}},
		{"every seed dead", []string{dead, dead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cluster.New(testContext(t), tt.seeds)
			require.Error(t, err)
			require.Nil(t, c)
		})
	}
}

func TestNewHonoursContext(t *testing.T) {
	a := startNode(t)
	a.setScript(func([]string) string { return cut })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cluster.New(ctx, []string{a.Addr})
	require.ErrorIs(t, err, context.Canceled)
}

func TestCallsAfterCloseFail(t *testing.T) {
	a := startNode(t)
	a.setScript(func([]string) string { return allSlotsTo(t, a.Addr) })
	c, err := cluster.New(testContext(t), []string{a.Addr})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	_, err = c.Do(testContext(t), "k", "GET", "k")
	require.ErrorIs(t, err, conn.ErrClosed)
	_, err = c.Node(testContext(t), "k")
	require.ErrorIs(t, err, conn.ErrClosed)
}

func TestEmptyBatches(t *testing.T) {
	a := startNode(t)
	a.setScript(func([]string) string { return allSlotsTo(t, a.Addr) })
	c := newClient(t, []string{a.Addr})
	ctx := testContext(t)
	replies, err := c.DoMulti(ctx, "k")
	require.NoError(t, err)
	require.Nil(t, replies)
	_, err = c.DoMulti(ctx, "k", []string{"PING"}, nil)
	require.ErrorIs(t, err, cluster.ErrEmptyCommand)
	_, err = c.Do(ctx, "k")
	require.ErrorIs(t, err, cluster.ErrEmptyCommand)
	require.Equal(t, []string{"CLUSTER SHARDS"}, a.commands(), "nothing sent")
}

// TestRealClusterTLS: a node with tls-cluster on lists both its ports; a
// client that reached its seed on the TLS port keeps to TLS ports.
func TestRealClusterTLS(t *testing.T) {
	srv := redistest.Start(t, redistest.WithCluster(), redistest.WithTLS(), redistest.WithConfig("tls-cluster yes"))
	c := newClient(t, []string{srv.TLSAddr}, cluster.WithConnOptions(conn.WithTLS(srv.TLSConfig())))
	require.Equal(t, srv.TLSAddr, c.SlotOwner(cluster.Slot("k")))
	v, err := c.Do(testContext(t), "k", "SET", "k", "v")
	require.NoError(t, err)
	require.Equal(t, "OK", v.Str)

	plain := newClient(t, []string{srv.Addr})
	require.Equal(t, srv.Addr, plain.SlotOwner(cluster.Slot("k")))
}

// TestConcurrentCallsDuringMoves: many callers at once while the slot
// keeps moving back (every refresh says a, a says MOVED to b): each call
// ends at b, refreshes never overlap, and the race detector finds nothing.
func TestConcurrentCallsDuringMoves(t *testing.T) {
	a, b := startNode(t), startNode(t)
	a.setScript(func(args []string) string {
		if isCommand(args, "CLUSTER SHARDS") {
			return allSlotsTo(t, a.Addr)
		}
		return errReply(fmt.Sprintf("MOVED %d %s", keySlot, b.Addr))
	})
	b.setScript(func([]string) string { return bulk("from b") })
	c := newClient(t, []string{a.Addr}, cluster.WithRefreshInterval(0))
	ctx := testContext(t)

	var wg sync.WaitGroup
	errs := make(chan error, 16*20)
	for range 16 {
		wg.Go(func() {
			for range 20 {
				v, err := c.Do(ctx, "k", "GET", "k")
				if err == nil && v.Str != "from b" {
					err = fmt.Errorf("reply %v", v)
				}
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 16*20, b.count("GET k"))
}
