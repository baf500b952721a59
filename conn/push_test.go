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
