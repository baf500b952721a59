package subscriber_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/subscriber"
)

func TestWatchReturnsWithTheSubscriptionInPlace(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	w := watch(t, s, "lock:{a}")
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:lock:{a}"))
	release(t, srv, "lock:{a}")
	requireWoken(t, w)
}

func TestKeyspaceEventsAreTurnedOnKeepingOtherFlags(t *testing.T) {
	for _, tt := range []struct{ initial, mustHave string }{
		{initial: `""`, mustHave: "Kgxe"},
		{initial: "Elh", mustHave: "ElhKgxe"},
		{initial: "KA", mustHave: "KA"},
	} {
		t.Run(tt.initial, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithConfig("notify-keyspace-events "+tt.initial))
			newSubscriber(t, srv)
			got := srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").Elems[1].Str
			for _, flag := range tt.mustHave {
				require.Contains(t, got, string(flag))
			}
		})
	}
}

func TestExpiryWakesAWaiter(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`notify-keyspace-events ""`))
	s := newSubscriber(t, srv)
	w := watch(t, s, "lease")
	srv.Do(t, "SET", "lease", "x", "PX", "20")
	requireWoken(t, w)
}

func TestRefusedConfigNamesTheSetting(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`rename-command CONFIG ""`))
	_, err := subscriber.New(context.Background(), srv.Addr)
	require.ErrorIs(t, err, subscriber.ErrKeyspaceEvents)
	require.ErrorContains(t, err, "notify-keyspace-events")
	require.ErrorContains(t, err, "WithKeyspaceEventsConfigured")

	// An operator who configured the server says so, and New succeeds.
	newSubscriber(t, srv, subscriber.WithKeyspaceEventsConfigured())
}

func TestWaitersAreWokenOneAtATimeInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	first, second, third := watch(t, s, "k"), watch(t, s, "k"), watch(t, s, "k")

	release(t, srv, "k")
	barrier(t, s, srv)
	require.Equal(t, []bool{true, false, false}, []bool{woken(first), woken(second), woken(third)})

	// The first waiter got the lock and left; the next release is the
	// second's.
	first.Close()
	release(t, srv, "k")
	barrier(t, s, srv)
	require.Equal(t, []bool{true, false}, []bool{woken(second), woken(third)})

	// Two releases while the second has not taken its wake-up: the third
	// gets the other one.
	release(t, srv, "k")
	release(t, srv, "k")
	barrier(t, s, srv)
	require.Equal(t, []bool{true, true}, []bool{woken(second), woken(third)})
}

func TestALeavingWaiterPassesOnAWakeUpItDidNotTake(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	first, second := watch(t, s, "k"), watch(t, s, "k")
	release(t, srv, "k")
	barrier(t, s, srv)
	first.Close() // woken, but gave up before taking it
	require.True(t, woken(second))
}

func TestTheLastWaiterLeavingDropsTheSubscription(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	a, b := watch(t, s, "k"), watch(t, s, "k")
	a.Close()
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:k"))
	b.Close()
	requireNumsub(t, srv, "__keyspace@0__:k", 0)

	// And a new waiter subscribes again.
	c := watch(t, s, "k")
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:k"))
	release(t, srv, "k")
	requireWoken(t, c)
}

func TestCancelledWatchLeavesNothingBehind(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Watch(ctx, subscriber.Topic{Key: "k"})
	require.ErrorIs(t, err, context.Canceled)
	requireNumsub(t, srv, "__keyspace@0__:k", 0)
	w := watch(t, s, "k")
	release(t, srv, "k")
	requireWoken(t, w)
}

func TestDirectedWakeUpsWakeOnlyTheirWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	a := directed(t, s, "")
	b := directed(t, s, "")
	require.NotEqual(t, idOf(a), idOf(b))
	require.Equal(t, channelOf(a), channelOf(b), "one channel for the process")
	require.True(t, strings.HasPrefix(channelOf(a), "baton:wake:"))

	srv.Do(t, "PUBLISH", channelOf(a), idOf(b))
	requireWoken(t, b)
	require.False(t, woken(a))
	srv.Do(t, "PUBLISH", channelOf(a), "not a number")
	srv.Do(t, "PUBLISH", channelOf(a), idOf(a)+" fence 42")
	requireWoken(t, a)
	require.False(t, woken(b))
}

func TestReconnectResubscribesAndWakesEveryWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv, subscriber.WithConnOptions(conn.WithRedialBackoff(time.Millisecond, 10*time.Millisecond)))
	w := watch(t, s, "k")
	d := directed(t, s, "")

	srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
	requireWoken(t, w)
	requireWoken(t, d)
	require.Equal(t, int64(1), numsub(t, srv, "__keyspace@0__:k"))
	require.Equal(t, int64(1), numsub(t, srv, channelOf(d)))
	release(t, srv, "k")
	requireWoken(t, w)
}

func TestReconnectAfterARestartTurnsKeyspaceEventsOnAgain(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`notify-keyspace-events ""`))
	s := newSubscriber(t, srv, subscriber.WithConnOptions(conn.WithRedialBackoff(time.Millisecond, 20*time.Millisecond)))
	w := watch(t, s, "k")
	srv.Restart(t)
	requireWoken(t, w) // woken by the reconnect
	requireNumsub(t, srv, "__keyspace@0__:k", 1)
	release(t, srv, "k")
	requireWoken(t, w)
}

func TestClosedSubscriberRefusesWaiters(t *testing.T) {
	srv := redistest.Start(t)
	s, err := subscriber.New(context.Background(), srv.Addr)
	require.NoError(t, err)
	w := watch(t, s, "k")
	require.NoError(t, s.Close())
	requireWoken(t, w)
	_, err = s.Watch(context.Background(), subscriber.Topic{Key: "k"})
	require.ErrorIs(t, err, conn.ErrClosed)
	_, err = s.Watch(context.Background(), subscriber.Topic{Directed: true})
	require.ErrorIs(t, err, conn.ErrClosed)
	require.NoError(t, s.Close())
}

func TestWithoutKeyspaceEventsLeavesTheConfigAlone(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`notify-keyspace-events ""`))
	s := newSubscriber(t, srv, subscriber.WithoutKeyspaceEvents())
	require.Empty(t, srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").Elems[1].Str)
	_, err := s.Watch(context.Background(), subscriber.Topic{Key: "k"})
	require.ErrorIs(t, err, subscriber.ErrKeyspaceEvents)
}

func TestWatchChannelWakesOnAnyMessage(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	w, err := s.Watch(context.Background(), subscriber.Topic{Channel: "wanted:{k}"})
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, int64(1), numsub(t, srv, "wanted:{k}"))
	require.Equal(t, int64(1), srv.Do(t, "PUBLISH", "wanted:{k}", "anything").Int)
	requireWoken(t, w)
	w.Close()
	requireNumsub(t, srv, "wanted:{k}", 0)
}

// A message can reach the connection's reader goroutine while New is still
// setting up: the push handler then runs concurrently with New. Under
// -race this test catches a field that New writes after the first dial and
// the handler reads. A message for a key without waiters is dropped.
func TestAMessageDuringNewIsHandled(t *testing.T) {
	f := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("HELLO", "3") {
			return
		}
		// The handshake's reply and the message in one write, so that the
		// reader goroutine handles the message while New goes on.
		message := ">3\r\n" + bulk("message") + bulk("__keyspace@0__:k") + bulk("del")
		if s.Send("%1\r\n"+bulk("proto")+":3\r\n"+message) != nil {
			return
		}
		args, err := s.ReadCommand()
		if err != nil || len(args) != 2 || args[0] != "SUBSCRIBE" {
			t.Errorf("want SUBSCRIBE <channel>, got %q (%v)", args, err)
			return
		}
		if !s.Expect("PING") {
			return
		}
		if s.Send(">3\r\n"+bulk("subscribe")+bulk(args[1])+":1\r\n+PONG\r\n") != nil {
			return
		}
		s.Stall()
	})
	s, err := subscriber.New(context.Background(), f.Addr, subscriber.WithKeyspaceEventsConfigured())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Equal(t, 0, subscriber.DB(s))
}

// bulk encodes s as a RESP bulk string, for a fake server's replies.
func bulk(s string) string {
	return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
}

// The database is known only once the handshake has run; keyspace events
// come on its channels.
func TestWatchInTheDatabaseTheConnectionSelects(t *testing.T) {
	srv := redistest.Start(t)
	for _, tt := range []struct {
		name string
		addr string
		opts []subscriber.Option
	}{
		{name: "URL", addr: "redis://" + srv.Addr + "/3"},
		{name: "option", addr: srv.Addr, opts: []subscriber.Option{subscriber.WithConnOptions(conn.WithDB(3))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := subscriber.New(ctx, tt.addr, tt.opts...)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			require.Equal(t, 3, subscriber.DB(s))
			w := watch(t, s, "k")
			require.Equal(t, int64(1), numsub(t, srv, "__keyspace@3__:k"))
			sentinel := watch(t, s, "sentinel")

			c, err := conn.Dial(ctx, srv.Addr, conn.WithDB(3))
			require.NoError(t, err)
			defer c.Close()
			do := func(args ...string) {
				t.Helper()
				_, err := c.Do(ctx, args...)
				require.NoError(t, err)
			}
			do("SET", "k", "x")
			do("SET", "sentinel", "x")
			do("DEL", "sentinel")
			requireWoken(t, sentinel) // so k's set event has been handled
			require.False(t, woken(w), "a change that is not a release wakes no one")
			do("DEL", "k")
			requireWoken(t, w)
		})
	}
}

// The hook runs on the reader goroutine for a release that wakes its
// waiter, and may close that waiter: the wake-up then passes on.
func TestOnReleaseMayCloseItsWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	called := make(chan struct{}, 1)
	var first *subscriber.Waiter
	ready := make(chan struct{})
	first, err := s.Watch(context.Background(), subscriber.Topic{Key: "k", OnRelease: func() {
		<-ready // closed before any release: never blocks
		first.Close()
		called <- struct{}{}
	}})
	require.NoError(t, err)
	close(ready)
	second := watch(t, s, "k")

	release(t, srv, "k")
	requireWoken(t, second)
	select {
	case <-called:
	case <-time.After(5 * time.Second):
		t.Fatal("hook not called")
	}
	require.False(t, woken(first))
}

// A directed waiter's OnMessage is given the text after its ID, before
// the message wakes it: on the process's channel and on a shard channel.
// A message naming another waiter gives it nothing.
func TestOnMessageHasTheTextBeforeTheWakeUp(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	for _, c := range []struct{ name, shardPrefix, publish string }{
		{"process channel", "", "PUBLISH"},
		{"shard channel", "{a}:to:", "SPUBLISH"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var texts []string
			topic := subscriber.Topic{Directed: true, OnMessage: func(text string) {
				mu.Lock()
				defer mu.Unlock()
				texts = append(texts, text)
			}}
			if c.shardPrefix != "" {
				topic.Channel, topic.Shard = c.shardPrefix, true
			}
			w, err := s.Watch(context.Background(), topic)
			require.NoError(t, err)
			defer w.Close()
			other := directed(t, s, c.shardPrefix)

			srv.Do(t, c.publish, channelOf(w), idOf(other)+" not for w")
			srv.Do(t, c.publish, channelOf(w), idOf(w)+" 1764000000000000 10000")
			requireWoken(t, w)
			srv.Do(t, c.publish, channelOf(w), idOf(w))
			requireWoken(t, w)
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{"1764000000000000 10000", ""}, texts)
		})
	}
}

func TestOnMessageIsForADirectedWaiter(t *testing.T) {
	srv := redistest.Start(t)
	s := newSubscriber(t, srv)
	_, err := s.Watch(context.Background(), subscriber.Topic{Key: "k", OnMessage: func(string) {}})
	require.Error(t, err)
	_, err = s.Watch(context.Background(), subscriber.Topic{Channel: "c", OnMessage: func(string) {}})
	require.Error(t, err)
}
