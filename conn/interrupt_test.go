package conn_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// goroutinesIn counts the goroutines whose stack has fn in it.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}

// A caller whose context can end reads its own reply, as one whose context
// cannot: no reader goroutine is woken in between. When its context ends,
// it returns at once, and a reader goroutine reads the reply and drops it.
func TestACallerWhoseContextCanEndReadsForItself(t *testing.T) {
	release := make(chan struct{})
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		if !s.Expect("GET", "k") {
			return
		}
		<-release
		assert.NoError(t, s.Send("$1\r\nv\r\n"))
		if s.Expect("PING") {
			assert.NoError(t, s.Send("+PONG\r\n"))
		}
		s.Stall()
	})
	c := dial(t, fake.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "GET", "k")
		errs <- err
	}()
	waitPending(t, c, 1)
	require.Eventually(t, func() bool { return goroutinesIn("conn.(*Conn).readBetweenFrames") == 1 }, 5*time.Second, time.Millisecond)
	require.Zero(t, goroutinesIn("conn.(*Conn).readWhileDue"), "a reader goroutine was started for a lone caller")

	cancel()
	select {
	case err := <-errs:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return after its context was cancelled")
	}
	require.Equal(t, 1, goroutinesIn("conn.(*Conn).readWhileDue"), "nobody reads the reply still due")
	close(release)
	waitPending(t, c, 0)
	v, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
}

// The read timeout counts from when the wait for the server began: a
// caller who gives up and leaves the wait to a reader goroutine does not
// start it again.
func TestAHandOverDoesNotRestartTheReadTimeout(t *testing.T) {
	const timeout, givesUp = 300 * time.Millisecond, 200 * time.Millisecond
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("GET", "k")
		s.Stall()
	})
	c := dial(t, fake.Addr, conn.WithReadTimeout(timeout))
	ctx, cancel := context.WithTimeout(context.Background(), givesUp)
	defer cancel()
	start := time.Now()
	_, err := c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled connection did not break")
	}
	took := time.Since(start)
	require.ErrorIs(t, c.Err(), conn.ErrBroken)
	// Restarted at the hand-over, the timeout would end at givesUp +
	// timeout (500 ms).
	require.Less(t, took, givesUp+timeout-50*time.Millisecond, "the hand-over restarted the read timeout")
	require.GreaterOrEqual(t, took, timeout)
}

// cancelFrom cancels the context it holds, once, from inside the tap of
// the socket's dir: a Read (the context ends while the reply is being
// read) or a Write (it ends once the command was sent, before its caller
// waits). pause gives context.AfterFunc's interrupt time to run.
type cancelFrom struct {
	dir    conn.Direction
	pause  time.Duration
	cancel atomic.Pointer[context.CancelFunc]
}

func (c *cancelFrom) tap(dir conn.Direction, _ []byte) {
	if dir != c.dir {
		return
	}
	if f := c.cancel.Swap(nil); f != nil {
		(*f)()
		time.Sleep(c.pause)
	}
}

// A context that ends once the reply's bytes are in does not cost the
// connection: the interrupt it sends lands after the read, and the idle
// connection keeps no deadline in the past for its next look at the
// socket.
func TestAnInterruptThatLosesTheRaceToTheReplyLeavesNoTrace(t *testing.T) {
	srv := redistest.Start(t)
	cancelling := &cancelFrom{dir: conn.Read, pause: 20 * time.Millisecond}
	c := dial(t, srv.Addr, conn.WithTap(cancelling.tap))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelling.cancel.Store(&cancel)
	v, err := c.Do(ctx, "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", v.Str)
	time.Sleep(5 * time.Millisecond) // idle long enough to be looked at
	require.NoError(t, c.Err())
	_, err = c.Do(context.Background(), "PING")
	require.NoError(t, err)
}

// A caller whose context ended while its command was being sent leaves
// its reply to a reader goroutine: the read timeout still applies to it,
// and a server's close after it is noticed, so that the next call fails
// as not sent.
func TestAReplyLeftBeforeItsCallerWaitedIsStillRead(t *testing.T) {
	t.Run("the server stalls", func(t *testing.T) {
		fake := redistest.NewFake(t, func(s *redistest.Session) {
			s.Expect("GET", "k")
			s.Stall()
		})
		cancelling := &cancelFrom{dir: conn.Write}
		c := dial(t, fake.Addr, conn.WithReadTimeout(100*time.Millisecond), conn.WithTap(cancelling.tap))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelling.cancel.Store(&cancel)
		_, err := c.Do(ctx, "GET", "k")
		require.ErrorIs(t, err, context.Canceled)
		select {
		case <-c.Done():
			require.ErrorIs(t, c.Err(), conn.ErrBroken)
		case <-time.After(5 * time.Second):
			t.Fatalf("the read timeout never broke the stalled connection: Pending %d", c.Pending())
		}
	})
	t.Run("the server replies and closes", func(t *testing.T) {
		fake := redistest.NewFake(t, func(s *redistest.Session) {
			if s.Expect("GET", "k") {
				assert.NoError(t, s.Send("$1\r\nv\r\n"))
			}
			s.Cut()
		})
		cancelling := &cancelFrom{dir: conn.Write}
		c := dial(t, fake.Addr, conn.WithTap(cancelling.tap))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cancelling.cancel.Store(&cancel)
		if _, err := c.Do(ctx, "GET", "k"); err != nil {
			require.ErrorIs(t, err, context.Canceled) // else the reply won the race
		}
		waitPending(t, c, 0)
		require.Eventually(t, func() bool { return c.Err() != nil }, 5*time.Second, time.Millisecond)
		_, err := c.Do(context.Background(), "PING")
		require.ErrorIs(t, err, conn.ErrBroken)
		var uncertain *conn.UncertainError
		require.False(t, errors.As(err, &uncertain), "the PING was not sent")
	})
}
