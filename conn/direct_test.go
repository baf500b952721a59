package conn_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// A caller that gives up before its reply begins leaves the stream in
// step: the late reply is dropped, and the next caller gets its own.
func TestAReaderThatGivesUpLeavesTheLateReplyToTheNext(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("GET", "k") {
			return
		}
		s.Pause(100 * time.Millisecond)
		assert.NoError(t, s.Send("$4\r\nlate\r\n"))
		if !s.Expect("PING") {
			return
		}
		assert.NoError(t, s.Send("+PONG\r\n"))
		s.Stall()
	})
	c := dial(t, fake.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Err(), "giving up between replies breaks nothing")

	v, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
	require.Zero(t, c.Pending())
}

// A connection whose callers read their replies keeps no goroutine while
// idle: the one that reads for many callers at once returns when no reply
// is due.
func TestAnIdleConnectionHoldsNoGoroutine(t *testing.T) {
	srv := redistest.Start(t)
	before := goleak.IgnoreCurrent()
	c, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	defer c.Close()
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 50 {
				want := strconv.Itoa(g*100 + i)
				v, err := c.Do(context.Background(), "ECHO", want)
				if !assert.NoError(t, err) || !assert.Equal(t, want, v.Str) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, c.Pending())
	goleak.VerifyNone(t, before)
}

// A server that closes an idle connection is noticed by the next call
// before it sends anything: the call fails as not sent, and a Client makes
// it again on a new connection.
func TestACloseWhileIdleIsNoticedBeforeSending(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	c := dial(t, srv.Addr, conn.WithClientName("idle-victim"))
	_, err := c.Do(ctx, "PING")
	require.NoError(t, err)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	time.Sleep(50 * time.Millisecond) // the close reaches the socket, and the connection has idled
	_, err = c.Do(ctx, "PING")
	require.ErrorIs(t, err, conn.ErrBroken)
	var uncertain *conn.UncertainError
	require.False(t, errors.As(err, &uncertain), "nothing was sent")

	client, err := conn.NewClient(srv.Addr, conn.WithClientName("idle-victim"))
	require.NoError(t, err)
	defer client.Close()
	first, err := client.Conn(ctx)
	require.NoError(t, err)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	time.Sleep(50 * time.Millisecond)
	v, err := client.Do(ctx, "CLIENT", "GETNAME")
	require.NoError(t, err, "made again on a new connection")
	require.Equal(t, "idle-victim", v.Str)
	second, err := client.Conn(ctx)
	require.NoError(t, err)
	require.NotSame(t, first, second)
}

// A read timeout counts only while replies are due: an idle connection
// outlives it, and its look at the socket is not cut short by it.
func TestAReadTimeoutDoesNotBreakAnIdleConnection(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr, conn.WithReadTimeout(50*time.Millisecond))
	_, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	require.NoError(t, c.Err())
	_, err = c.Do(context.Background(), "PING")
	require.NoError(t, err)
}

// A caller that gives up while its reply is on its way, half-sent, leaves
// it to be read and dropped: the connection and the calls behind it are
// untouched. That holds for a caller waiting on a reader goroutine (a
// batch from Start), and for one that reads for itself (Do), which loses
// none of the half it read.
func TestGivingUpMidReplyLeavesTheOthersAlone(t *testing.T) {
	for name, call := range map[string]func(ctx context.Context, c *conn.Conn) error{
		"Start and Wait": func(ctx context.Context, c *conn.Conn) error {
			p, err := c.Start([]string{"GET", "k"})
			if err != nil {
				return err
			}
			_, err = p.Wait(ctx)
			return err
		},
		"Do": func(ctx context.Context, c *conn.Conn) error {
			_, err := c.Do(ctx, "GET", "k")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { giveUpMidReply(t, call) })
	}
}

func giveUpMidReply(t *testing.T, call func(ctx context.Context, c *conn.Conn) error) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("GET", "k") || !s.Expect("PING") {
			return
		}
		assert.NoError(t, s.Send("$10\r\nabc"))
		s.Pause(100 * time.Millisecond)
		assert.NoError(t, s.Send("defghij\r\n+PONG\r\n"))
		s.Stall()
	})
	c := dial(t, fake.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() { got <- call(ctx, c) }()
	waitPending(t, c, 1)
	pong := make(chan error, 1)
	go func() {
		v, err := c.Do(context.Background(), "PING")
		if err == nil && v.Str != "PONG" {
			err = errors.New("got " + v.String())
		}
		pong <- err
	}()
	require.ErrorIs(t, <-got, context.DeadlineExceeded)
	require.NoError(t, <-pong)
	require.NoError(t, c.Err())
}

// Replies to a batch that nobody waits for are read all the same, so the
// connection goes idle, and a server's close of it is noticed.
func TestStartedRepliesAreReadWithNobodyWaiting(t *testing.T) {
	srv := redistest.Start(t)
	c := dial(t, srv.Addr, conn.WithClientName("started"))
	_, err := c.Start([]string{"PING"})
	require.NoError(t, err)
	waitPending(t, c, 0)
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	require.Eventually(t, func() bool { return c.Err() != nil }, 5*time.Second, time.Millisecond)
}
