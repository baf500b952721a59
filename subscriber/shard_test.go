package subscriber_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// shardNumsub is how many clients of srv are subscribed to the shard
// channel.
func shardNumsub(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	return srv.Do(t, "PUBSUB", "SHARDNUMSUB", channel).Elems[1].Int
}

// barrierShard returns once the Subscriber has read everything srv sent
// it before: a message on a shard channel of its own comes after.
func barrierShard(t *testing.T, s *subscriber.Subscriber, srv *redistest.Server) {
	t.Helper()
	w, err := s.Watch(context.Background(), subscriber.Topic{Channel: "barrier", Shard: true})
	require.NoError(t, err)
	defer w.Close()
	srv.Do(t, "SPUBLISH", "barrier", "x")
	requireWoken(t, w)
}

func TestAShardChannelHearsSPublishAlone(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	first, err := s.Watch(context.Background(), subscriber.Topic{Channel: "{a}:wanted", Shard: true})
	require.NoError(t, err)
	second, err := s.Watch(context.Background(), subscriber.Topic{Channel: "{a}:wanted", Shard: true})
	require.NoError(t, err)
	require.Equal(t, int64(1), shardNumsub(t, srv, "{a}:wanted"), "one subscription for both")

	srv.Do(t, "PUBLISH", "{a}:wanted", "1")
	barrierShard(t, s, srv)
	require.False(t, woken(first), "PUBLISH does not reach a shard subscription")

	require.Equal(t, int64(1), srv.Do(t, "SPUBLISH", "{a}:wanted", "1").Int)
	barrierShard(t, s, srv)
	require.Equal(t, []bool{true, false}, []bool{woken(first), woken(second)}, "one at a time, in arrival order")

	first.Close()
	second.Close()
	redistest.Eventually(t, func() bool { return shardNumsub(t, srv, "{a}:wanted") == 0 }, 5*time.Second, time.Millisecond)
}

func TestDirectedWaitersOnAShardChannelAreWokenByID(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	ctx := context.Background()
	first := directed(t, s, "{a}:to:")
	second := directed(t, s, "{a}:to:")
	elsewhere := directed(t, s, "{b}:to:")
	channel := channelOf(first)
	require.Equal(t, channel, channelOf(second), "one channel for the waiters of one prefix")
	require.True(t, strings.HasPrefix(channel, "{a}:to:baton:wake:"), "the prefix, then the process's channel: %s", channel)

	srv.Do(t, "SPUBLISH", channel, idOf(second)+" offer")
	// A message naming a waiter of another channel wakes nobody.
	srv.Do(t, "SPUBLISH", channel, idOf(elsewhere))
	barrierShard(t, s, srv)
	require.Equal(t, []bool{false, true, false}, []bool{woken(first), woken(second), woken(elsewhere)})

	// A directed waiter that leaves hands its wake-up to nobody.
	srv.Do(t, "SPUBLISH", channel, idOf(first))
	barrierShard(t, s, srv)
	first.Close()
	require.False(t, woken(second))

	_, err := s.Watch(ctx, subscriber.Topic{Channel: channel, Shard: true})
	require.ErrorIs(t, err, subscriber.ErrChannelInUse)
	_, err = s.Watch(ctx, subscriber.Topic{Channel: channel})
	require.ErrorIs(t, err, subscriber.ErrChannelInUse)

	second.Close()
	elsewhere.Close()
	redistest.Eventually(t, func() bool { return shardNumsub(t, srv, channel) == 0 }, 5*time.Second, time.Millisecond)
}

func TestShardChannelsAreSubscribedAgainAfterAReconnect(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	ctx := context.Background()
	to := directed(t, s, "{a}:to:")
	wanted, err := s.Watch(ctx, subscriber.Topic{Channel: "{a}:wanted", Shard: true})
	require.NoError(t, err)
	defer wanted.Close()

	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	requireWoken(t, to) // a reconnect wakes every waiter
	requireWoken(t, wanted)
	redistest.Eventually(t, func() bool { return shardNumsub(t, srv, channelOf(to)) == 1 }, 5*time.Second, time.Millisecond)
	redistest.Eventually(t, func() bool { return shardNumsub(t, srv, "{a}:wanted") == 1 }, 5*time.Second, time.Millisecond)

	srv.Do(t, "SPUBLISH", channelOf(to), idOf(to))
	requireWoken(t, to)
}

// TestAShardChannelWhoseSlotMovesWakesItsWaiters: on a Redis Cluster, a
// shard channel can only be subscribed on the node that serves its slot
// (elsewhere the error is the server's MOVED), and when the slot moves
// away the server ends the subscription: its waiters are woken, to look
// for the new node.
func TestAShardChannelWhoseSlotMovesWakesItsWaiters(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	ctx := context.Background()
	prefix := "{a}:to:"
	slot := cluster.Slot(prefix)
	owner := c.Primary(t, slot)
	other := c.Nodes()[0]
	if other == owner {
		other = c.Nodes()[1]
	}

	wrong := newSubscriber(t, other, subscriber.WithoutKeyspaceEvents())
	_, err := wrong.Watch(ctx, subscriber.Topic{Channel: prefix, Shard: true, Directed: true})
	require.ErrorIs(t, err, resp.Moved)

	s := newSubscriber(t, owner, subscriber.WithoutKeyspaceEvents())
	to := directed(t, s, prefix)
	c.MigrateSlot(t, slot, other)
	requireWoken(t, to)
	require.Zero(t, shardNumsub(t, owner, channelOf(to)))
}

// TestWaitersComingAndGoingKeepAShardChannelsKind: waiters that join and
// leave one shard channel while its subscription is dropped and made
// again never find it taken for a plain channel, and never subscribe it
// as one.
func TestWaitersComingAndGoingKeepAShardChannelsKind(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				w, err := s.Watch(ctx, subscriber.Topic{Channel: "{a}:to:", Shard: true, Directed: true})
				if !assert.NoError(t, err) {
					return
				}
				w.Close()
			}
		})
	}
	wg.Wait()
	w := directed(t, s, "{a}:to:")
	require.Equal(t, int64(1), shardNumsub(t, srv, channelOf(w)))
	require.Zero(t, numsub(t, srv, channelOf(w)), "never a plain subscription")
}
