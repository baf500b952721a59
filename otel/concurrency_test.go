package batonotel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

func TestOneObserverServesManyLockers(t *testing.T) {
	srv := redistest.Start(t)
	tm := newTelemetry(t)
	lockers := []*lock.Locker{tm.open(t, srv), tm.open(t, srv)}
	// At most seven events a call, 700 a Locker: within its queue
	// (observe.QueueSize) even if the observer ran only at Close, so
	// that no event is dropped and the counts below are exact.
	const goroutines, rounds = 4, 25 // per Locker
	var wg sync.WaitGroup
	for i, l := range lockers {
		for g := range goroutines {
			key := fmt.Sprintf("k%d", (i+g)%3) // contended, across the Lockers
			wg.Go(func() {
				for range rounds {
					ls, err := l.Lock(context.Background(), key)
					if !assert.NoError(t, err) {
						return
					}
					if !assert.NoError(t, ls.Unlock(context.Background())) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, l := range lockers {
		require.NoError(t, l.Close())
	}

	const calls = 2 * goroutines * rounds
	c := tm.collect(t)
	require.EqualValues(t, calls, c.sum("baton.lock.acquisitions"))
	require.EqualValues(t, calls, c.count("baton.lock.wait.duration"))
	require.EqualValues(t, calls, c.sum("baton.lock.leases.ended", reason("released")))
	require.Zero(t, c.sum("baton.lock.leases.held"))
	require.Zero(t, c.sum("baton.lock.waiters"))
	require.Zero(t, c.sum("baton.observe.dropped"))
	spans := tm.ended("baton.lock")
	require.Len(t, spans, calls)
	for _, s := range spans {
		require.Contains(t, eventNames(s), "lease granted")
	}
	require.Len(t, tm.spans.Started(), calls, "every span ended")
}
