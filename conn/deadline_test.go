package conn_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// A caller that never gives up, but needs a bound, gets it without a
// context deadline: Done stays nil, so it reads its own reply.
func TestAReplyDeadlineKeepsDoneNil(t *testing.T) {
	ctx := conn.WithReplyDeadline(context.Background(), time.Now().Add(time.Hour))
	require.Nil(t, ctx.Done())
	type key struct{}
	outer := context.WithValue(context.Background(), key{}, "kept")
	require.Equal(t, "kept", conn.WithReplyDeadline(outer, time.Now()).Value(key{}))
}

func TestAReplyDeadlineBreaksAStalledConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []conn.Option
	}{
		{"no read timeout", nil},
		{"later read timeout", []conn.Option{conn.WithReadTimeout(time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := redistest.NewFake(t, func(s *redistest.Session) {
				s.Expect("INCR", "n")
				s.Stall()
			})
			c := dial(t, fake.Addr, tc.opts...)
			start := time.Now()
			_, err := c.Do(conn.WithReplyDeadline(context.Background(), start.Add(150*time.Millisecond)), "INCR", "n")
			var uncertain *conn.UncertainError
			require.ErrorAs(t, err, &uncertain)
			require.ErrorIs(t, err, conn.ErrBroken)
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.Less(t, time.Since(start), 5*time.Second)
			require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
		})
	}
}

// The caller with the deadline is not the one reading: the reader is
// blocked with no deadline, and must be woken at the new caller's.
func TestAReplyDeadlineReachesAReadAlreadyBlocked(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("BLPOP", "q", "0")
		s.Expect("PING")
		s.Stall()
	})
	c := dial(t, fake.Addr)
	first := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), "BLPOP", "q", "0")
		first <- err
	}()
	waitPending(t, c, 1)
	_, err := c.Do(conn.WithReplyDeadline(context.Background(), time.Now().Add(150*time.Millisecond)), "PING")
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var uncertain *conn.UncertainError
	require.ErrorAs(t, <-first, &uncertain, "the connection broke for every call in flight")
}

func TestAPassedReplyDeadlineSendsNothing(t *testing.T) {
	srv := redistest.Start(t)
	log := &wireLog{}
	c := dial(t, srv.Addr, conn.WithTap(log.tap))
	_, err := c.Do(conn.WithReplyDeadline(context.Background(), time.Now().Add(-time.Millisecond)), "PING")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var uncertain *conn.UncertainError
	require.NotErrorAs(t, err, &uncertain)
	require.Empty(t, log.Writes())
	_, err = c.Do(context.Background(), "PING")
	require.NoError(t, err, "the connection is untouched")
}

func TestAMetReplyDeadlineLeavesTheConnectionAlone(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr)
	for range 3 {
		_, err := c.Do(conn.WithReplyDeadline(context.Background(), time.Now().Add(100*time.Millisecond)), "PING")
		require.NoError(t, err)
	}
	time.Sleep(200 * time.Millisecond)
	v, err := c.DoMulti(context.Background(), []string{"PING"}, []string{"ECHO", "x"})
	require.NoError(t, err)
	require.Equal(t, "x", v[1].Str)
	require.NoError(t, c.Err())
}

// A dial made for a call with a reply deadline ends at it, before the dial
// timeout.
func TestAReplyDeadlineBoundsAClientsDial(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	client, err := conn.NewClient(fake.Addr, conn.WithClientName("never answered"), conn.WithDialTimeout(time.Hour))
	require.NoError(t, err)
	defer client.Close()
	start := time.Now()
	_, err = client.Do(conn.WithReplyDeadline(context.Background(), start.Add(150*time.Millisecond)), "PING")
	require.Error(t, err)
	require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded),
		"the dial's context or the handshake's reply ends at the deadline: %v", err)
	require.Less(t, time.Since(start), 5*time.Second)
}
