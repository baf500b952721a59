package lock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// lossRounds is how many losses each case of
// TestALeaseLostOnTheServerEndsAtOnce times.
const lossRounds = 200

// lossBound is the p99 that the losses of one run of
// TestALeaseLostOnTheServerEndsAtOnce must keep, all cases and modes
// together (2,800 losses), from the loss's command sent to the lease's
// context ended, on loopback (the server reports the loss as it
// happens); and caseBound, the p99 of each case's own 200. Over 50 runs
// with -race, on a 2-vCPU machine that other tests shared: the runs'
// p99 were 0.63-3.7 ms (median 1.3 ms), their cases' 0.46-5.4 ms
// (median 1.1 ms); an earlier build, without the confirmation, saw a
// case's p99 reach 8.7 ms. A few milliseconds without a CPU for the test, the
// server or the Subscriber delay two or three losses in a row, which is
// a case's p99 but not a run's. caseBound is over twice the worst case
// seen; lossBound is the figure the docs promise.
const (
	lossBound = 5 * time.Millisecond
	caseBound = 20 * time.Millisecond
)

// p99 is the 99th percentile of took, which it sorts.
func p99(took []time.Duration) time.Duration {
	slices.Sort(took)
	return took[len(took)*99/100-1]
}

// awaitTracked waits until the server tracks a key for a client: the
// Subscriber has read the held lock's key. The tests' servers have no
// other tracking client, and each test removes the keys it tracked.
func awaitTracked(t *testing.T, srv *redistest.Server) {
	t.Helper()
	c := dial(t, srv)
	defer c.Close()
	awaitTrackedOn(t, c)
}

// dial connects to srv once, for a test that asks it many things: a dial
// per command, hundreds a second, runs the loopback out of ports.
func dial(t *testing.T, srv *redistest.Server) *conn.Conn {
	t.Helper()
	c, err := conn.Dial(context.Background(), srv.Addr)
	require.NoError(t, err)
	return c
}

// do runs a command on c, failing the test on an error.
func do(t *testing.T, c *conn.Conn, args ...string) resp.Value {
	t.Helper()
	v, err := c.Do(context.Background(), args...)
	require.NoError(t, err)
	return v
}

// awaitTrackedOn is awaitTracked, asking on c.
func awaitTrackedOn(t *testing.T, c *conn.Conn) {
	t.Helper()
	redistest.Eventually(t, func() bool {
		return !strings.Contains(do(t, c, "INFO", "stats").Str, "tracking_total_keys:0\r\n")
	}, 2*time.Second, 100*time.Microsecond, "the lock's key is never tracked")
}

// untrack has the server forget the keys a round tracked, so that
// awaitTracked tells the next lock's key: a write invalidates a key,
// which ends its tracking. A read of a key already gone, as the
// Subscriber makes once a lease ended, tracks the key all the same.
func untrack(t *testing.T, c *conn.Conn, keys ...string) {
	t.Helper()
	for _, key := range keys {
		do(t, c, "SET", key, "untracked")
		do(t, c, "DEL", key)
	}
	redistest.Eventually(t, func() bool {
		return strings.Contains(do(t, c, "INFO", "stats").Str, "tracking_total_keys:0\r\n")
	}, 2*time.Second, 100*time.Microsecond, "the tracking table stays full")
}

// awaitEnd waits for ctx, a lease's, to end, and returns how long that took
// from start.
func awaitEnd(t *testing.T, ctx context.Context, start time.Time) time.Duration {
	t.Helper()
	select {
	case <-ctx.Done():
		return time.Since(start)
	case <-time.After(5 * time.Second):
		t.Fatal("the lease's context did not end")
		return 0
	}
}

func TestALeaseLostOnTheServerEndsAtOnce(t *testing.T) {
	var all []time.Duration
	bothModes(t, func(t *testing.T, mode string) { all = append(all, testALeaseLostOnTheServerEndsAtOnce(t, mode)...) })
	if len(all) > 0 {
		t.Logf("Done closed p99 %v after the loss was sent, all %d losses", p99(all), len(all))
		require.LessOrEqual(t, p99(all), lossBound)
	}
}

// testALeaseLostOnTheServerEndsAtOnce times each loss in mode, and returns
// the times.
func testALeaseLostOnTheServerEndsAtOnce(t *testing.T, mode string) (all []time.Duration) {
	srv := redistest.Start(t)
	l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
	// Another client, connected once, so that the time measured is the
	// loss's and the lease's, not a dial's.
	other := dial(t, srv)
	defer other.Close()
	for _, tt := range []struct {
		name  string
		lose  func(lockKey string) []string
		cause error
	}{
		{"DEL", func(k string) []string { return []string{"DEL", k} }, lock.ErrRemoved},
		{"UNLINK", func(k string) []string { return []string{"UNLINK", k} }, lock.ErrRemoved},
		{"SET", func(k string) []string { return []string{"SET", k, "another owner"} }, lock.ErrOverwritten},
		{"RENAME", func(k string) []string { return []string{"RENAME", k, k + ":away"} }, lock.ErrRemoved},
		{"PEXPIRE", func(k string) []string { return []string{"PEXPIRE", k, "-1"} }, lock.ErrRemoved},
		{"FLUSHDB", func(string) []string { return []string{"FLUSHDB"} }, lock.ErrFlushed},
		{"FLUSHALL", func(string) []string { return []string{"FLUSHALL"} }, lock.ErrFlushed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			took := make([]time.Duration, 0, lossRounds)
			for i := range lossRounds {
				key := fmt.Sprintf("%s-%d", tt.name, i)
				lockKey := "baton:{" + key + "}"
				ls := mustLock(t, l, key)
				ctx := ls.Context(context.Background())
				awaitTrackedOn(t, other)
				start := time.Now()
				_, err := other.Do(context.Background(), tt.lose(lockKey)...)
				require.NoError(t, err)
				took = append(took, awaitEnd(t, ctx, start))
				require.ErrorIs(t, context.Cause(ctx), tt.cause)
				require.ErrorIs(t, ls.Err(), tt.cause)
				require.ErrorIs(t, ls.Err(), lock.ErrLost)
				require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
				untrack(t, other, lockKey, lockKey+":away")
			}
			all = append(all, took...)
			casep99 := p99(took)
			t.Logf("%s: Done closed p50 %v, p99 %v, max %v after the loss was sent (%d losses)",
				tt.name, took[len(took)/2], casep99, took[len(took)-1], len(took))
			require.LessOrEqual(t, casep99, caseBound)
		})
	}
	return all
}

func TestALeaseWhoseKeyIsEvictedEndsAtOnce(t *testing.T) { bothModes(t, testEvicted) }

// evictionRounds is how many evictions testEvicted times, per mode.
const evictionRounds = 100

func testEvicted(t *testing.T, mode string) {
	srv := redistest.Start(t)
	l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute), lock.WithEvictionAllowed())...)
	other := dial(t, srv)
	defer other.Close()
	do(t, other, "CONFIG", "SET", "maxmemory-policy", "allkeys-random")
	filler := strings.Repeat("x", 64<<10)
	took := make([]time.Duration, 0, evictionRounds)
	for round := range evictionRounds {
		key := fmt.Sprint("evicted-", round)
		ls := mustLock(t, l, key)
		ctx := ls.Context(context.Background())
		awaitTrackedOn(t, other)
		do(t, other, "CONFIG", "SET", "maxmemory", "4mb")
		// Each filler may evict the lock: the one after which it is
		// gone did, and the time runs from just before it.
		fillers := []string{"DEL"}
		for i := 0; ; i++ {
			require.Less(t, i, 10_000, "the lock's key was never evicted")
			fillers = append(fillers, fmt.Sprint("filler-", i))
			start := time.Now()
			do(t, other, "SET", fillers[len(fillers)-1], filler)
			if do(t, other, "EXISTS", l.Key(key)).Int == 0 {
				took = append(took, awaitEnd(t, ctx, start))
				break
			}
		}
		require.ErrorIs(t, context.Cause(ctx), lock.ErrRemoved)
		// Room for the next round, without a flush, whose invalidation
		// of every key could reach the next lease late.
		do(t, other, "CONFIG", "SET", "maxmemory", "0")
		do(t, other, fillers...)
		untrack(t, other, l.Key(key))
	}
	require.NotContains(t, do(t, other, "INFO", "stats").Str, "evicted_keys:0\r\n")
	p := p99(took)
	t.Logf("Done closed p50 %v, p99 %v, max %v after the write that evicted the lock (%d evictions)",
		took[len(took)/2], p, took[len(took)-1], len(took))
	require.LessOrEqual(t, p, caseBound)
}

// A server restarted without persistence has lost every lock: the
// Subscriber learns it once it has reached the server again, and the lease
// ends then, for ErrVanished.
func TestALeaseGoneAfterARestartEndsOnReconnect(t *testing.T) { bothModes(t, testRestart) }

func testRestart(t *testing.T, mode string) {
	srv := redistest.Start(t)
	l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
	ls := mustLock(t, l, "k")
	ctx := ls.Context(context.Background())
	awaitTracked(t, srv)
	srv.Restart(t)
	restarted := time.Now()
	took := awaitEnd(t, ctx, restarted)
	t.Logf("Done closed %v after the server was back", took)
	require.ErrorIs(t, context.Cause(ctx), lock.ErrVanished)
}

// The server does not report a SWAPDB: the lease ends at its deadline, as
// without the watch.
func TestASwappedDatabaseIsNoticedAtTheDeadline(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(400*time.Millisecond))
	ls := mustLock(t, l, "k")
	ctx := ls.Context(context.Background())
	awaitTracked(t, srv)
	srv.Do(t, "SWAPDB", "0", "1")
	select {
	case <-ctx.Done():
		t.Fatal("a SWAPDB was reported; the docs say it is not")
	case <-time.After(100 * time.Millisecond):
	}
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), lock.ErrExpired)
}

// requireHeldFor fails the test if ls's context ends within d.
func requireHeldFor(t *testing.T, ctx context.Context, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("%s ended a live lease: %v", what, context.Cause(ctx))
	case <-time.After(d):
	}
}

func TestNothingTheHolderDoesEndsItsLease(t *testing.T) { bothModes(t, testNoFalseAlarm) }

func testNoFalseAlarm(t *testing.T, mode string) {
	srv := redistest.Start(t)
	t.Run("extensions", func(t *testing.T) {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
		ls := mustLock(t, l, "extended")
		ctx := ls.Context(context.Background())
		awaitTracked(t, srv)
		for range 50 {
			require.NoError(t, ls.Extend(context.Background(), time.Minute))
		}
		requireHeldFor(t, ctx, 50*time.Millisecond, "an extension")
		mustUnlock(t, ls)
		require.ErrorIs(t, context.Cause(ctx), lock.ErrReleased)
	})
	t.Run("watchdog", func(t *testing.T) {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(150*time.Millisecond), lock.WithAutoExtend())...)
		ls := mustLock(t, l, "watched")
		ctx := ls.Context(context.Background())
		requireHeldFor(t, ctx, time.Second, "the watchdog")
		mustUnlock(t, ls)
	})
	t.Run("write-backs", func(t *testing.T) {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
		ls, _, err := l.LockAndDo(context.Background(), "written", []string{"GET", l.Key("written") + ":state"})
		require.NoError(t, err)
		ctx := ls.Context(context.Background())
		awaitTracked(t, srv)
		for i := range 50 {
			held, err := ls.Commit(context.Background(), lock.Write{Key: l.Key("written") + ":state", Value: fmt.Sprint(i), TTL: time.Minute})
			require.NoError(t, err)
			require.True(t, held)
		}
		requireHeldFor(t, ctx, 50*time.Millisecond, "a write-back")
		_, err = ls.Commit(context.Background(), lock.Write{Key: l.Key("written") + ":state", Value: "last", TTL: time.Minute, Unlock: true})
		require.NoError(t, err)
		require.ErrorIs(t, context.Cause(ctx), lock.ErrReleased)
	})
	t.Run("hand-off", func(t *testing.T) {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
		first := mustLock(t, l, "handed")
		firstCtx := first.Context(context.Background())
		got := make(chan *lock.Lease, 1)
		go func() {
			ls, err := l.Lock(context.Background(), "handed")
			if err == nil {
				got <- ls
			}
			close(got)
		}()
		redistest.Eventually(t, func() bool { return waitersOf(t, srv, mode, "handed") > 0 }, 2*time.Second, time.Millisecond, "the second Lock never waited")
		mustUnlock(t, first)
		second, ok := <-got
		require.True(t, ok, "the second Lock failed")
		require.ErrorIs(t, context.Cause(firstCtx), lock.ErrReleased)
		ctx := second.Context(context.Background())
		requireHeldFor(t, ctx, 100*time.Millisecond, "the hand-off")
		mustUnlock(t, second)
	})
	t.Run("subscriber reconnect", func(t *testing.T) {
		l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
		ls := mustLock(t, l, "reconnected")
		ctx := ls.Context(context.Background())
		awaitTracked(t, srv)
		srv.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
		// The new connection turns tracking on and reads the lock in
		// one write, which the server runs whole: once it shows the
		// flag, the lock is read.
		redistest.Eventually(t, func() bool {
			return strings.Contains(srv.Do(t, "CLIENT", "LIST", "TYPE", "pubsub").Str, "flags=Pt ")
		}, 5*time.Second, time.Millisecond, "the Subscriber never came back")
		requireHeldFor(t, ctx, 100*time.Millisecond, "a reconnect")
		srv.Do(t, "DEL", "baton:{reconnected}")
		awaitEnd(t, ctx, time.Now())
		require.ErrorIs(t, context.Cause(ctx), lock.ErrRemoved) // and it listens again
	})
}

// A lease's cause says how it ended when its holder ended it, or its time
// did.
func TestALeaseSaysWhyItEnded(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv, lock.WithTTL(100*time.Millisecond))
	released := mustLock(t, l, "released")
	require.NoError(t, released.Err())
	mustUnlock(t, released)
	require.ErrorIs(t, released.Err(), lock.ErrReleased)

	ranOut := mustLock(t, l, "ran out")
	ctx := ranOut.Context(context.Background())
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), lock.ErrExpired)
	require.NotErrorIs(t, context.Cause(ctx), lock.ErrLost)

	closing, err := lock.Open(context.Background(), srv.Addr, lock.WithTTL(time.Minute))
	require.NoError(t, err)
	closed := mustLock(t, closing, "closed")
	ctx = closed.Context(context.Background())
	require.NoError(t, closing.Close())
	require.ErrorIs(t, context.Cause(ctx), lock.ErrClosed)

	parent, cancel := context.WithCancel(context.Background())
	outlived := mustLock(t, l, "outlived")
	ctx = outlived.Context(parent)
	cancel()
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.NoError(t, outlived.Err(), "the parent's end is not the lease's")
	mustUnlock(t, outlived)
}

// A server that refuses client-side caching tells nothing: a lost lock's
// lease ends at its deadline, as without the watch, and nothing else
// goes wrong.
func TestWithoutTrackingALeaseEndsAtItsDeadline(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig(`rename-command CLIENT ""`))
	l := open(t, srv, lock.WithTTL(300*time.Millisecond))
	ls := mustLock(t, l, "k")
	ctx := ls.Context(context.Background())
	srv.Do(t, "DEL", "baton:{k}")
	requireHeldFor(t, ctx, 100*time.Millisecond, "a DEL on a server without tracking")
	<-ctx.Done()
	require.ErrorIs(t, context.Cause(ctx), lock.ErrExpired)
	again := mustLock(t, l, "k") // the Locker works on
	mustUnlock(t, again)
}

// A Commit that keeps the lock, but whose script hands it to an owner
// that asked, is the holder's own release, though the watch may read
// the new owner before the Commit's reply comes: here the command
// connection is 5 ms farther than the Subscriber's, as under
// WithReplicaAck's WAIT or another network path.
func TestACommitThatHandsTheLockOnIsNoLoss(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		srv := redistest.Start(t)
		p, err := faultproxy.Start(srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close()) })
		c, err := conn.NewClient(p.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		sub, err := subscriber.New(context.Background(), srv.Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Close() })
		l, err := lock.New(c, sub, modeOptions(mode, lock.WithTTL(time.Minute))...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		other := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)

		ls := mustLock(t, l, "k")
		ctx := ls.Context(context.Background())
		awaitTracked(t, srv)
		got := lockInBackground(context.Background(), other, "k")
		redistest.Eventually(t, func() bool { return waitersOf(t, srv, mode, "k") > 0 }, 2*time.Second, time.Millisecond, "the other Lock never waited")
		p.SetLatency(5 * time.Millisecond)
		held, err := ls.Commit(context.Background(), lock.Write{Key: l.Key("k") + ":state", Value: "v", TTL: time.Minute})
		require.NoError(t, err)
		require.False(t, held)
		o := <-got
		require.NoError(t, o.err)
		mustUnlock(t, o.lease)
		require.ErrorIs(t, context.Cause(ctx), lock.ErrReleased)
	})
}

// A Subscriber that reads another database than the commands (or, for
// a moment after a Sentinel failover, another server) reads the lock
// gone: the lease confirms the loss where its own commands go before it
// ends, and watches again, paced, meanwhile.
func TestALossTheLocksServerDeniesEndsNothing(t *testing.T) {
	srv := redistest.Start(t)
	c, err := conn.NewClient(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	sub, err := subscriber.New(context.Background(), srv.Addr, subscriber.WithConnOptions(conn.WithDB(1)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Close() })
	l, err := lock.New(c, sub, lock.WithTTL(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ls := mustLock(t, l, "k")
	ctx := ls.Context(context.Background())
	before := commandCalls(t, srv)
	requireHeldFor(t, ctx, 500*time.Millisecond, "a Subscriber on another database")
	calls := commandCalls(t, srv) - before
	t.Logf("%d commands in 500 ms while the two disagreed", calls)
	require.Less(t, calls, int64(60), "the watch asks again faster than its pace")
	mustUnlock(t, ls)
}

// Done, Context, Err, Extend and Unlock of one lease from many goroutines
// at once, while another client deletes its lock: every context ends with
// one cause, Err agrees with it, and nothing races (-race).
func TestOneLeaseAskedFromManyGoroutinesAtOnce(t *testing.T) {
	bothModes(t, func(t *testing.T, mode string) {
		srv := redistest.Start(t)
		l := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
		for round := range 20 {
			ls := mustLock(t, l, fmt.Sprint("shared-", round))
			parent, cancel := context.WithCancel(context.Background())
			ctxs := make(chan context.Context, 32)
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					switch i % 4 {
					case 0:
						ctxs <- ls.Context(parent)
					case 1:
						ctxs <- ls.Context(nil) // taken as context.Background()
					case 2:
						<-ls.Done()
					case 3:
						_ = ls.Extend(context.Background(), time.Minute)
					}
				}()
			}
			srv.Do(t, "DEL", l.Key(fmt.Sprint("shared-", round)))
			wg.Wait()
			close(ctxs)
			cause := ls.Err()
			require.ErrorIs(t, cause, lock.ErrLost)
			for ctx := range ctxs {
				<-ctx.Done()
				require.Equal(t, cause, context.Cause(ctx))
			}
			require.ErrorIs(t, ls.Unlock(context.Background()), lock.ErrNotHeld)
			cancel()
		}
	})
}
