package conn_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// TestCancelledCallsLeaveTheConnectionInStep cancels 1000 calls at random
// moments (before sending, while queued, while the server works) and then
// checks that every later reply belongs to its own command.
func TestCancelledCallsLeaveTheConnectionInStep(t *testing.T) {
	srv := redistest.Start(t)
	forWaits(t, func(t *testing.T, opts ...conn.Option) {
		cancelCallsAtRandom(t, dial(t, srv.Addr, opts...))
	})
}

func cancelCallsAtRandom(t *testing.T, c *conn.Conn) {
	ctx := context.Background()

	var wg sync.WaitGroup
	var mu sync.Mutex
	cancelled := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 125 {
				callCtx, cancel := context.WithCancel(ctx)
				delay := time.Duration(rand.IntN(300)) * time.Microsecond
				timer := time.AfterFunc(delay, cancel)
				want := strconv.Itoa(g*1000 + i)
				// A slow command widens the window in which a cancel
				// lands after the command was sent.
				v, err := c.Do(callCtx, "EVAL", "for i=1,20000 do end return ARGV[1]", "0", want)
				timer.Stop()
				cancel()
				if err != nil {
					if !assert.ErrorIs(t, err, context.Canceled) {
						return
					}
					mu.Lock()
					cancelled++
					mu.Unlock()
					continue
				}
				if !assert.Equal(t, want, v.Str) {
					return
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed(), "a goroutine failed")
	t.Logf("%d of 1000 calls were cancelled", cancelled)
	require.Positive(t, cancelled)

	for i := range 1000 {
		want := "after-" + strconv.Itoa(i)
		v, err := c.Do(ctx, "ECHO", want)
		require.NoError(t, err)
		require.Equal(t, want, v.Str)
	}
	require.Zero(t, c.Pending())
	require.NoError(t, c.Err())
}

func TestCancelReturnsPromptlyWhileTheServerStalls(t *testing.T) {
	forWaits(t, func(t *testing.T, opts ...conn.Option) {
		// A spin wait far longer than the test: the context must end it.
		if len(opts) > 0 {
			opts = append(opts, conn.WithSpinWait(time.Hour))
		}
		cancelWhileTheServerStalls(t, opts...)
	})
}

func cancelWhileTheServerStalls(t *testing.T, opts ...conn.Option) {
	fake := redistest.NewFake(t, func(s *redistest.Session) {
		s.Expect("PING")
		s.Stall()
	})
	c := dial(t, fake.Addr, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "PING")
		errs <- err
	}()
	waitPending(t, c, 1)
	cancel()
	select {
	case err := <-errs:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("Do did not return after its context was cancelled")
	}
	// The abandoned call still holds its place until its reply comes.
	require.Equal(t, 1, c.Pending())
	require.NoError(t, c.Err())
}

func TestDeadlineIsWrapped(t *testing.T) {
	fake := redistest.NewFake(t, func(s *redistest.Session) { s.Stall() })
	c := dial(t, fake.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, "GET", "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "GET")
}
