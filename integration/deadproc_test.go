package integration_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/lock"
)

const (
	// deadTTL is the lock TTL of the dead-process tests: a holder that
	// died blocks the others this long at most.
	deadTTL = time.Second
	// deadSlack is what the others may take beyond it on a loaded
	// machine, and the bound of a hand-off past dead queued waiters
	// (lock's TestFairKilledWaitersDoNotStallTheQueue measured 0.6–2.4ms).
	deadSlack = time.Second
)

// TestADeadProcess SIGKILLs a worker process while it holds a lock, in
// both modes, and while it is queued behind others in fair mode: the
// others carry on, a dead holder costing at most its TTL, dead queued
// waiters nothing but the hand-off past them.
func TestADeadProcess(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		for _, fair := range []bool{false, true} {
			mode := mix{fair: fair, ttl: deadTTL}
			t.Run(mode.String()+"/holding", func(t *testing.T) {
				srv := b.start(t, spec{})
				w := startWorker(t, job{Addr: srv.Addr(), Do: "hold", Key: "k", Fair: fair, TTL: int64(deadTTL)})
				waiter, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer waiter.close()
				got := make(chan error, 1)
				go func() {
					callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					lease, err := waiter.locker.Lock(callCtx, "k")
					if err == nil {
						err = lease.Unlock(callCtx)
					}
					got <- err
				}()
				time.Sleep(100 * time.Millisecond) // waiting, not holding
				killed := time.Now()
				w.kill()
				select {
				case err := <-got:
					require.NoError(t, err)
					t.Logf("%s: the waiter held %v after the holder was killed", mode, time.Since(killed).Round(time.Millisecond))
					require.Less(t, time.Since(killed), deadTTL+deadSlack)
				case <-time.After(deadTTL + deadSlack):
					t.Fatalf("the waiter did not get the lock within %v of the holder's death", deadTTL+deadSlack)
				}
			})
		}
		for _, dead := range []int{1, 3} {
			t.Run("fair/queued/"+strconv.Itoa(dead)+" dead", func(t *testing.T) {
				srv := b.start(t, spec{})
				mode := mix{fair: true, ttl: time.Minute}
				holder, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer holder.close()
				held, err := holder.locker.Lock(ctx, "k")
				require.NoError(t, err)
				var workers []*worker
				for i := range dead {
					workers = append(workers, startWorker(t, job{Addr: srv.Addr(), Do: "queue", Key: "k", Fair: true}))
					waitQueued(t, holder.locker, "k", i+1)
				}
				live, err := openInstance(ctx, srv.Addr(), mode)
				require.NoError(t, err)
				defer live.close()
				got := make(chan time.Time, 1)
				errs := make(chan error, 1)
				go func() {
					lease, err := live.locker.Lock(ctx, "k")
					if err != nil {
						errs <- err
						return
					}
					got <- time.Now()
					errs <- lease.Unlock(ctx)
				}()
				waitQueued(t, holder.locker, "k", dead+1)
				for _, w := range workers {
					w.kill()
				}
				released := time.Now()
				require.NoError(t, held.Unlock(ctx))
				select {
				case at := <-got:
					t.Logf("%d dead ahead: the live waiter held %v after the release", dead, at.Sub(released).Round(10*time.Microsecond))
					require.Less(t, at.Sub(released), deadSlack)
				case err := <-errs:
					t.Fatal(err)
				case <-time.After(deadSlack):
					t.Fatalf("the live waiter did not get the lock within %v of the release", deadSlack)
				}
				require.NoError(t, <-errs)
			})
		}
	})
}

// waitQueued waits until n owners are queued for key.
func waitQueued(t *testing.T, l *lock.Locker, key string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := l.Inspect(context.Background(), key)
		return err == nil && len(info.Queue) == n
	}, 10*time.Second, 5*time.Millisecond, "never %d queued", n)
}
