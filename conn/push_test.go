package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

func TestDoPushReturnsOnceTheSubscriptionIsInPlace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	pushes := make(chan resp.Value, 8)
	sub := dial(t, srv.Addr, conn.WithRESP3(), conn.WithPushHandler(func(v resp.Value) { pushes <- v }))
	pub := dial(t, srv.Addr)

	require.NoError(t, sub.DoPush(ctx, "SUBSCRIBE", "news", "sport"))
	// No waiting: the server has the subscriptions when DoPush returns.
	n, err := pub.Do(ctx, "PUBLISH", "sport", "goal")
	require.NoError(t, err)
	require.Equal(t, int64(1), n.Int)

	var kinds []string
	for range 3 {
		v := <-pushes
		kinds = append(kinds, v.Elems[0].Str+" "+v.Elems[1].Str)
	}
	require.Equal(t, []string{"subscribe news", "subscribe sport", "message sport"}, kinds)

	require.NoError(t, sub.DoPush(ctx, "UNSUBSCRIBE", "sport"))
	n, err = pub.Do(ctx, "PUBLISH", "sport", "again")
	require.NoError(t, err)
	require.Zero(t, n.Int)

	// Ordinary calls still work on the subscribed connection.
	v, err := sub.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
}

func TestDoPushReportsARefusedCommandAndStaysInStep(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("user bob on >pw ~* resetchannels +@all"))
	ctx := context.Background()
	sub := dial(t, srv.Addr, conn.WithRESP3(), conn.WithUsername("bob"), conn.WithPassword("pw"))
	err := sub.DoPush(ctx, "SUBSCRIBE", "secret")
	require.ErrorIs(t, err, resp.NoPerm)
	v, err := sub.Do(ctx, "ECHO", "still in step")
	require.NoError(t, err)
	require.Equal(t, "still in step", v.Str)
	require.Zero(t, sub.Pending())
}

func TestDoPushNeedsRESP3(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr)
	require.Error(t, c.DoPush(context.Background(), "SUBSCRIBE", "x"))
	require.Zero(t, c.Pending())
}

// A connection with a push handler has a reader goroutine, which notices
// at once that the server closed it. One read by its callers notices when
// a call or Err looks.
func TestDoneIsClosedWhenTheConnectionStops(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []conn.Option
	}{
		{"push", []conn.Option{conn.WithRESP3(), conn.WithPushHandler(func(resp.Value) {})}},
		{"direct", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t)
			c := dial(t, srv.Addr, append(tt.opts, conn.WithClientName("doomed"))...)
			select {
			case <-c.Done():
				t.Fatal("Done closed on a healthy connection")
			default:
			}
			srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
			if tt.name == "direct" {
				require.Eventually(t, func() bool { return c.Err() != nil }, 5*time.Second, time.Millisecond)
			}
			select {
			case <-c.Done():
				require.ErrorIs(t, c.Err(), conn.ErrBroken)
			case <-time.After(5 * time.Second):
				t.Fatal("Done not closed after the server killed the connection")
			}
		})
	}
}

// A push frame that reaches an idle RESP3 connection without a push
// handler is dropped, as one read with a reply is: it is no reply that
// nobody asked for, and the connection stays up. The message is published
// while the connection is idle, so it waits in the socket, and then after
// a reply, so it waits in the read buffer.
func TestAPushToAnIdleConnectionWithoutAHandlerIsDropped(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr, conn.WithRESP3())
	ctx := context.Background()
	require.NoError(t, c.DoPush(ctx, "SUBSCRIBE", "ch"))
	publisher := dial(t, srv.Addr)
	publish := func() {
		v, err := publisher.Do(ctx, "PUBLISH", "ch", "hello")
		require.NoError(t, err)
		require.EqualValues(t, 1, v.Int, "the subscribed connection hears it")
	}

	publish()
	time.Sleep(10 * time.Millisecond) // idle for longer than the look at the socket waits
	require.NoError(t, c.Err(), "a push waiting in the socket")
	v, err := c.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
	require.NoError(t, c.Err())
}

// The same, with the push read into the buffer behind a reply, where the
// look at an idle connection finds it before the socket.
func TestAPushBufferedBehindAReplyIsDropped(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("HELLO", "3") || s.Send("%0\r\n") != nil || !s.Expect("PING") {
			return
		}
		if s.Send("+PONG\r\n>3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$5\r\nhello\r\n") != nil || !s.Expect("PING") {
			return
		}
		_ = s.Send("+PONG\r\n")
		s.Stall()
	})
	c := dial(t, fake.Addr, conn.WithRESP3())
	for range 2 {
		v, err := c.Do(context.Background(), "PING")
		require.NoError(t, err)
		require.Equal(t, "PONG", v.Str)
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, c.Err())
	}
}
