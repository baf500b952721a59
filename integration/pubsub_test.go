package integration_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// pubsubTTL is the leases' TTL while the subscribe connections are
	// killed over and over.
	pubsubTTL = time.Second
	// pubsubBound is the longest a free lock may stay untaken while
	// waiters wait: a waiter that missed the release re-checks once its
	// subscriber is back, or at the latest when the holder's TTL would
	// have run out (fast mode), or at its next queue renewal, a third of
	// the 3s queue lease (fair mode); plus a margin for a loaded machine.
	pubsubBound = pubsubTTL + time.Second
	// pubsubKillEvery is how often every subscribe connection is killed,
	// and pubsubHold how long each waiter holds the lock: hand-offs then
	// fall before, during and after reconnects.
	pubsubKillEvery = 50 * time.Millisecond
	pubsubHold      = 120 * time.Millisecond
)

// TestWaitersOutliveKilledSubscribeConnections kills every subscribe
// connection (CLIENT KILL TYPE pubsub) every 50ms, and right before each
// release, while 8 waiters in 4 instances wait for one lock and then pass
// it on: no free lock stays untaken past the fallback bound, and every
// waiter gets its turn.
func TestWaitersOutliveKilledSubscribeConnections(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		for _, m := range []mix{{ttl: pubsubTTL}, {ttl: pubsubTTL, fair: true}} {
			t.Run(m.String(), func(t *testing.T) {
				srv := b.start(t, spec{})
				ctx := context.Background()
				holder, err := openInstance(ctx, srv.Addr(), m)
				require.NoError(t, err)
				defer holder.close()
				var waiters []*instance
				for range 4 {
					in, err := openInstance(ctx, srv.Addr(), m)
					require.NoError(t, err)
					defer in.close()
					waiters = append(waiters, in)
				}
				held, err := holder.locker.Lock(ctx, "k")
				require.NoError(t, err)

				// Each waiter's turn: when it got the lock, and when it
				// began to let it go.
				type turn struct{ got, letGo time.Time }
				var mu sync.Mutex
				var turns []turn
				errs := make(chan error, 8)
				var wg sync.WaitGroup
				for i := range 8 {
					in := waiters[i%len(waiters)]
					wg.Go(func() {
						callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
						defer cancel()
						lease, err := in.locker.Lock(callCtx, "k")
						if err != nil {
							errs <- err
							return
						}
						got := time.Now()
						time.Sleep(pubsubHold)
						letGo := time.Now()
						mu.Lock()
						turns = append(turns, turn{got, letGo})
						mu.Unlock()
						// And once more right before the release, so that
						// its notification or hand-off finds the others'
						// subscribe connections gone.
						if _, err := redisKill(srv.Addr()); err != nil {
							errs <- err
							return
						}
						errs <- lease.Unlock(callCtx)
					})
				}

				killing, stopKilling := context.WithCancel(ctx)
				defer stopKilling() // also when the test ends early
				killed := make(chan int64, 1)
				go func() {
					var n int64
					tick := time.NewTicker(pubsubKillEvery)
					defer tick.Stop()
					for {
						select {
						case <-killing.Done():
							killed <- n
							return
						case <-tick.C:
							// The test's goroutine alone may fail the test.
							v, err := redisKill(srv.Addr())
							if err == nil {
								n += v
							}
						}
					}
				}()
				time.Sleep(300 * time.Millisecond) // waiters subscribed, some killed
				released := time.Now()
				require.NoError(t, held.Unlock(ctx))
				wg.Wait()
				stopKilling()
				n := <-killed
				close(errs)
				for err := range errs {
					require.NoError(t, err)
				}
				require.Len(t, turns, 8)
				slices.SortFunc(turns, func(a, b turn) int { return a.got.Compare(b.got) })
				var gaps []time.Duration
				last := released
				for _, tr := range turns {
					gaps = append(gaps, tr.got.Sub(last))
					last = tr.letGo
				}
				worst := slices.Max(gaps)
				t.Logf("%s: %d subscribe connections killed; free-to-taken gaps %v, worst %v", m, n, roundAll(gaps), worst.Round(time.Millisecond))
				require.Positive(t, n, "no subscribe connection was killed")
				require.LessOrEqual(t, worst, pubsubBound)
			})
		}
	})
}

// redisKill kills every subscribe connection on the server at addr.
func redisKill(addr string) (int64, error) {
	v, err := doAt(addr, "CLIENT", "KILL", "TYPE", "pubsub")
	return v.Int, err
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
