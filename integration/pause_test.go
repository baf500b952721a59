package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/lock"
)

// pauseTTL is the lease TTL of the pause tests, and pauseFor how long they
// freeze the server: past the TTL.
const (
	pauseTTL = time.Second
	pauseFor = 3 * pauseTTL / 2
	// pauseDoneSlack is how late past the TTL a Done may close on a
	// loaded machine: its timer's own lateness.
	pauseDoneSlack = 200 * time.Millisecond
)

// TestAServerPausedPastTheTTL freezes the server (SIGSTOP, or docker
// pause) for longer than the leases' TTL. Every lease's Done fires by its
// deadline although no reply comes; once the server is back, no lease
// whose Done is open is anything but the lock's holder in Redis; a waiter
// that waited through the pause gets the lock; and under contention the
// history stays linearizable.
func TestAServerPausedPastTheTTL(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		for _, m := range []mix{{ttl: pauseTTL}, {ttl: pauseTTL, fair: true}} {
			t.Run(m.String()+"/leases", func(t *testing.T) {
				srv := b.start(t, spec{})
				ctx := context.Background()
				holder, err := openInstance(ctx, srv.Addr(), m)
				require.NoError(t, err)
				defer holder.close()
				watched, err := openInstance(ctx, srv.Addr(), m, lock.WithAutoExtend())
				require.NoError(t, err)
				defer watched.close()
				waiter, err := openInstance(ctx, srv.Addr(), m)
				require.NoError(t, err)
				defer waiter.close()

				var leases []*lock.Lease
				for i, key := range []string{"a", "b", "c", "d"} {
					in := holder
					if i >= 2 {
						in = watched
					}
					lease, err := in.locker.Lock(ctx, key)
					require.NoError(t, err)
					leases = append(leases, lease)
				}
				// A waiter, queued (fair) or subscribed (fast) behind a
				// holder, before the pause.
				waited := make(chan error, 1)
				go func() {
					lease, err := waiter.locker.Lock(ctx, "a")
					if err == nil {
						err = lease.Unlock(ctx)
					}
					waited <- err
				}()
				time.Sleep(50 * time.Millisecond)
				frozen := time.Now()
				srv.Pause(t, pauseFor)
				var latest time.Duration
				for i, lease := range leases {
					select {
					case <-lease.Done():
						latest = max(latest, time.Since(frozen))
					case <-time.After(time.Until(frozen.Add(pauseTTL + pauseDoneSlack))):
						t.Fatalf("lease %d: Done still open %v into a pause, past its TTL of %v", i, time.Since(frozen), pauseTTL)
					}
				}
				t.Logf("%s: every Done closed within %v of the freeze (TTL %v)", m, latest.Round(time.Millisecond), pauseTTL)
				srv.Resume()
				for i, lease := range leases {
					require.ErrorIs(t, lease.Unlock(ctx), lock.ErrNotHeld, "lease %d", i)
				}
				select {
				case err := <-waited:
					require.NoError(t, err)
				case <-time.After(5 * time.Second):
					t.Fatal("the waiter did not get the lock within 5s of the resume")
				}
			})
			t.Run(m.String()+"/contention", func(t *testing.T) {
				srv := b.start(t, spec{})
				cm := defaultMix
				cm.fair = m.fair
				contention(t, srv.Addr(), cm, 2, func(rec *recorder) {
					time.Sleep(500 * time.Millisecond)
					rec.add(event{Kind: kindFault, Fault: "pause"})
					srv.Pause(t, pauseFor)
					time.Sleep(pauseFor + time.Second)
				})
			})
		}
	})
}
