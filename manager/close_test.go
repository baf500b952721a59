package manager_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/observing"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/observe"
)

// TestModifyAfterCloseWritesNothing: once Close has returned, Modify fails
// with ErrClosed on every path, with or without hold and whether the token
// was held, before fn runs and before anything is sent: the state in
// Redis is as it was, and no lock is taken. Get still works, as Close's
// doc says. Before, a Modify without hold wrote after Close (state 1 → 2).
func TestModifyAfterCloseWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	forEachPath(t, srv, func(t *testing.T, m *manager.Manager[counter]) {
		ctx := context.Background()
		require.NoError(t, m.Close())
		ran := false
		err := m.Modify(ctx, "k", func(c *counter) error { ran = true; c.N++; return nil })
		require.ErrorIs(t, err, manager.ErrClosed)
		require.False(t, ran, "fn ran after Close")
		require.Equal(t, 1, stateN(t, srv), "Modify wrote after Close")
		require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "Modify took the lock after Close")
		v, err := m.Get(ctx, "k")
		require.NoError(t, err, "Get works after Close")
		require.Equal(t, 1, v.N)
	})
}

// TestAModifyWhoseFunctionRunsWhenCloseBeginsWritesNothing: Close does not
// wait for a function in progress, which is the caller's code and may
// wait on what the caller stops next. The Modify that runs it writes
// nothing once fn returns, releases the lock, and fails with ErrClosed, on
// every path. Before, a Modify without hold, or the first under hold,
// wrote after Close had returned, and Close waited for the function of a
// held Modify.
func TestAModifyWhoseFunctionRunsWhenCloseBeginsWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	forEachPath(t, srv, func(t *testing.T, m *manager.Manager[counter]) {
		entered, closed := make(chan struct{}), make(chan struct{})
		modified := make(chan error, 1)
		go func() {
			modified <- m.Modify(context.Background(), "k", func(c *counter) error {
				close(entered)
				<-closed
				c.N++
				return nil
			})
		}()
		<-entered
		closeReturned := make(chan error, 1)
		go func() { closeReturned <- m.Close() }()
		var closeErr error
		waitedForFn := false
		select {
		case closeErr = <-closeReturned:
		case <-time.After(2 * time.Second):
			waitedForFn = true
		}
		close(closed)
		err := <-modified
		if waitedForFn {
			closeErr = <-closeReturned
		}
		require.False(t, waitedForFn, "Close waited for the function in progress")
		require.NoError(t, closeErr)
		require.ErrorIs(t, err, manager.ErrClosed)
		require.Equal(t, 1, stateN(t, srv), "written after Close returned")
		require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock is still held")
	})
}

// TestCloseRacingModify: goroutines modify two tokens in a loop while
// Close is called at a random moment. Close returns, and so does every
// Modify (no hang); every Modify returns nil or ErrClosed; nothing is
// written once Close has returned; the counts stored are exactly the
// Modify calls that returned nil, so a Modify that failed with ErrClosed
// wrote nothing; and no lock is left held. In both lock modes, with and
// without hold.
func TestCloseRacingModify(t *testing.T) {
	srv := redistest.Start(t)
	tokens := []string{"a", "b"}
	for _, mode := range []string{"fast", "fair"} {
		var lockOpts []lock.Option
		if mode == "fair" {
			lockOpts = append(lockOpts, lock.WithFair())
		}
		for _, hold := range []time.Duration{0, time.Hour} {
			name := mode
			if hold > 0 {
				name += "+hold"
			}
			t.Run(name, func(t *testing.T) {
				srv.Do(t, "FLUSHALL")
				m := manager.New[counter](openLocker(t, srv, lockOpts...), manager.WithHold(hold))
				const workers = 8
				var wg sync.WaitGroup
				var mu sync.Mutex
				succeeded := map[string]int{}
				var unexpected []error
				start := make(chan struct{})
				for i := range workers {
					token := tokens[i%len(tokens)]
					wg.Go(func() {
						<-start
						for range 500 {
							err := m.Modify(context.Background(), token, increment)
							mu.Lock()
							switch {
							case err == nil:
								succeeded[token]++
							case !errors.Is(err, manager.ErrClosed):
								unexpected = append(unexpected, err)
							}
							mu.Unlock()
							if err != nil {
								return
							}
						}
					})
				}
				close(start)
				time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
				closed := make(chan error, 1)
				go func() { closed <- m.Close() }()
				select {
				case err := <-closed:
					require.NoError(t, err)
				case <-time.After(10 * time.Second):
					t.Fatal("Close hangs")
				}
				atClose := map[string]string{}
				for _, token := range tokens {
					atClose[token] = srv.Do(t, "GET", m.Key(token)).Str
				}
				wg.Wait()
				require.Empty(t, unexpected)
				for _, token := range tokens {
					require.Equal(t, atClose[token], srv.Do(t, "GET", m.Key(token)).Str, "token %s written after Close returned", token)
					v, err := m.Get(context.Background(), token)
					require.NoError(t, err)
					require.Equal(t, succeeded[token], v.N, "token %s: the writes are not the Modify calls that returned nil", token)
					require.Zero(t, srv.Do(t, "EXISTS", "baton:{"+token+"}").Int, "token %s's lock left held", token)
				}
				t.Logf("%v written before Close", succeeded)
			})
		}
	}
}

// TestAModifyWaitingForTheLockWhenCloseBeginsStopsWaiting: another
// Locker holds the token's lock, and a Modify waits for it (it has asked,
// or queued). Close must end that wait: the Modify returns ErrClosed
// promptly, long before the holder lets go, its function never runs, and
// once the holder lets go nothing of this Manager takes the lock or
// writes. In both lock modes, with and without hold, and for each kind
// of context the Modify may have: one that cannot end
// (context.Background), one that cannot end but carries values, and one
// that can end. Before, the Modify waited on after Close had returned,
// took the lock once the holder let go, ran fn, and only then released it
// and failed with ErrClosed.
func TestAModifyWaitingForTheLockWhenCloseBeginsStopsWaiting(t *testing.T) {
	type key struct{}
	contexts := []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{"background", func(*testing.T) context.Context { return context.Background() }},
		{"values", func(*testing.T) context.Context { return context.WithValue(context.Background(), key{}, 1) }},
		{"cancelable", func(t *testing.T) context.Context { return t.Context() }},
	}
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		var lockOpts []lock.Option
		if mode == "fair" {
			lockOpts = append(lockOpts, lock.WithFair())
		}
		for _, hold := range []time.Duration{0, time.Hour} {
			for _, c := range contexts {
				name := mode
				if hold > 0 {
					name += "+hold"
				}
				t.Run(name+"/"+c.name, func(t *testing.T) {
					testAModifyWaitingWhenCloseBegins(t, c.ctx(t), srv, lockOpts, hold)
				})
			}
		}
	}
}

// testAModifyWaitingWhenCloseBegins is one case of
// TestAModifyWaitingForTheLockWhenCloseBeginsStopsWaiting: a Modify under
// ctx, on a Manager with hold, waits for a lock another Locker holds.
func testAModifyWaitingWhenCloseBegins(t *testing.T, ctx context.Context, srv *redistest.Server, lockOpts []lock.Option, hold time.Duration) {
	srv.Do(t, "FLUSHALL")
	holder, err := openLocker(t, srv, lockOpts...).Lock(ctx, "k")
	require.NoError(t, err)
	rec := &observing.Recorder{}
	m := manager.New[counter](openLocker(t, srv, append(lockOpts, lock.WithObserver(rec))...), manager.WithHold(hold))
	var ran atomic.Bool
	modified := make(chan error, 1)
	go func() {
		modified <- m.Modify(ctx, "k", func(c *counter) error { ran.Store(true); c.N++; return nil })
	}()
	redistest.Eventually(t, func() bool { return len(rec.Of(observe.Asked)) > 0 },
		5*time.Second, time.Millisecond, "the Modify never waited for the lock")

	start := time.Now()
	require.NoError(t, m.Close())
	var modifyErr error
	returned := false
	select {
	case modifyErr = <-modified:
		returned = true
	case <-time.After(2 * time.Second):
	}
	took := time.Since(start)
	// Let go: a Modify still waiting takes the lock now.
	require.NoError(t, holder.Unlock(ctx))
	if !returned {
		select {
		case modifyErr = <-modified:
		case <-time.After(10 * time.Second):
			t.Fatal("the Modify hangs after the holder let go")
		}
	}
	t.Logf("returned within 2s of Close: %v, after %v (fn ran: %v): %v", returned, took.Round(time.Millisecond), ran.Load(), modifyErr)
	require.True(t, returned, "the Modify waited for the lock after Close began")
	require.ErrorIs(t, modifyErr, manager.ErrClosed)
	require.False(t, ran.Load(), "fn ran after Close began")
	// Nothing of the Manager's takes the lock: no request or
	// queue entry of it is left for the holder's release to
	// hand the lock to.
	for range 20 {
		require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock was taken after the holder let go")
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}:state").Int, "the state was written")
}

// TestAHeldModifyWaitingItsTurnWhenCloseBeginsStopsWaiting: with hold,
// local Modify calls for one token take turns. One waits its turn while
// another's function runs when Close begins: it returns ErrClosed at once,
// without waiting for that function, and never runs its own. Before, it
// waited for the function in progress, whatever it waited on.
func TestAHeldModifyWaitingItsTurnWhenCloseBeginsStopsWaiting(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	m := manager.New[counter](openLocker(t, srv), manager.WithHold(time.Hour))
	entered, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- m.Modify(ctx, "k", func(c *counter) error {
			close(entered)
			<-release
			c.N++
			return nil
		})
	}()
	<-entered
	var ran atomic.Bool
	second := make(chan error, 1)
	go func() {
		second <- m.Modify(ctx, "k", func(c *counter) error { ran.Store(true); c.N++; return nil })
	}()
	time.Sleep(50 * time.Millisecond) // the second waits its turn

	require.NoError(t, m.Close())
	var secondErr error
	returned := false
	select {
	case secondErr = <-second:
		returned = true
	case <-time.After(2 * time.Second):
	}
	close(release)
	require.ErrorIs(t, <-first, manager.ErrClosed)
	if !returned {
		secondErr = <-second
	}
	require.True(t, returned, "the Modify waited its turn after Close began")
	require.ErrorIs(t, secondErr, manager.ErrClosed)
	require.False(t, ran.Load(), "fn ran after Close began")
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock is still held")
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}:state").Int, "the state was written")
}

// TestCloseIsBoundedByAWriteBackStuckBeforeItIsSent: through sentinels
// that name a primary that died (no replica to promote), a write-back
// waits, before it is sent, for the primary to come back: with hold (a
// write that keeps the lease) for as long as its context allows, which
// for context.Background is for ever; without hold (the write-back and
// release) for the Locker's release timeout. Close must not wait for it
// beyond its own bound, and the usual shutdown, the Manager's Close and
// then the Locker's, must end within the Locker's Close's bound (three
// release timeouts), since the Locker's Close is what ends the stuck call.
// Before, the Manager's Close waited for the write-back: with hold until
// the Locker's Close, which it kept from running, ended it; without hold
// for the rest of the release timeout.
func TestCloseIsBoundedByAWriteBackStuckBeforeItIsSent(t *testing.T) {
	const releaseTimeout = 3 * time.Second
	for _, hold := range []time.Duration{0, time.Hour} {
		name := "no hold"
		if hold > 0 {
			name = "hold"
		}
		t.Run(name, func(t *testing.T) {
			s := redistest.StartSentinels(t, 0, 1)
			ctx := context.Background()
			l, err := lock.Open(ctx, s.URL(), lock.WithReleaseTimeout(releaseTimeout))
			require.NoError(t, err)
			lockerClosed := false
			t.Cleanup(func() {
				if !lockerClosed {
					_ = l.Close()
				}
			})
			m := manager.New[counter](l, manager.WithHold(hold))
			if hold > 0 {
				require.NoError(t, m.Modify(ctx, "k", increment)) // held from now on
			}

			entered, killed := make(chan struct{}), make(chan struct{})
			modified := make(chan error, 1)
			go func() {
				modified <- m.Modify(ctx, "k", func(c *counter) error {
					close(entered)
					<-killed
					c.N++
					return nil
				})
			}()
			<-entered
			s.KillPrimary(t)
			time.Sleep(100 * time.Millisecond) // the connection's end reaches the client
			close(killed)
			time.Sleep(300 * time.Millisecond) // the write-back is on its way, waiting for the primary
			select {
			case err := <-modified:
				t.Fatalf("the write-back did not wait for the primary: %v", err)
			default:
			}

			start := time.Now()
			managerClosed := make(chan struct{})
			go func() {
				_ = m.Close()
				close(managerClosed)
			}()
			closeTook := time.Duration(-1)
			select {
			case <-managerClosed:
				closeTook = time.Since(start)
			case <-time.After(2 * time.Second):
			}
			// The Locker's Close, which the usual shutdown calls next.
			lockerClosed = true
			require.NoError(t, l.Close())
			<-managerClosed
			both := time.Since(start)
			var modifyErr error
			select {
			case modifyErr = <-modified:
			case <-time.After(10 * time.Second):
				t.Fatal("the Modify still hangs after the Locker's Close")
			}
			took := "over 2s"
			if closeTook >= 0 {
				took = closeTook.Round(time.Millisecond).String()
			}
			t.Logf("Manager.Close took %s; with Locker.Close %v; the Modify returned %v", took, both.Round(time.Millisecond), modifyErr)
			require.GreaterOrEqual(t, closeTook, time.Duration(0), "Manager.Close waited over 2s for the stuck write-back")
			require.Less(t, both, 3*releaseTimeout+time.Second, "Manager.Close and Locker.Close together took longer than the Locker's Close may")
			require.Error(t, modifyErr)
			require.NotErrorIs(t, modifyErr, manager.ErrClosed, "the write-back had not passed Close's gate: the test shows nothing")
		})
	}
}
