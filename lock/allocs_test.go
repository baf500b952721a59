package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// An uncontended Lock and Unlock allocate at most this many times: the
// claim with its lease, its strings, the acquire's command, and the
// release's reply deadline, batch and replies; fair mode adds its waiter,
// the waiter's channel, and the hook that keeps a hand-off's message for
// the claim (Topic.OnMessage, a method value bound to the claim).
func TestLockUnlockAllocations(t *testing.T) {
	redistest.SkipUnderRace(t)
	srv := redistest.Start(t)
	for mode, most := range map[string]float64{"fast": 6, "fair": 9} {
		t.Run(mode, func(t *testing.T) {
			l := open(t, srv, modeOptions(mode)...)
			ctx := context.Background()
			allocs := testing.AllocsPerRun(200, func() {
				ls, err := l.Lock(ctx, "allocs")
				require.NoError(t, err)
				require.NoError(t, ls.Unlock(ctx))
			})
			t.Logf("%s: %v allocations", mode, allocs)
			require.LessOrEqual(t, allocs, most)
		})
	}
}

// A Lock and a write-back that unlocks allocate at most this many times:
// the write-back's call and its arguments beside what Lock and Unlock
// allocate. The fast call's KEYS are made inline, where a function that
// chose the mode's call put them on the heap (11 in fast mode), and the
// fast call goes out behind its PING in one allocation (10 when it did
// not fit pingBatch).
func TestCommitAllocations(t *testing.T) {
	redistest.SkipUnderRace(t)
	srv := redistest.Start(t)
	for mode, most := range map[string]float64{"fast": 9, "fair": 15} {
		t.Run(mode, func(t *testing.T) {
			l := open(t, srv, modeOptions(mode)...)
			ctx := context.Background()
			w := lock.Write{Key: l.Key("allocs") + ":state", Value: "v", TTL: time.Minute, Unlock: true}
			allocs := testing.AllocsPerRun(200, func() {
				ls, err := l.Lock(ctx, "allocs")
				require.NoError(t, err)
				_, err = ls.Commit(ctx, w)
				require.NoError(t, err)
			})
			t.Logf("%s: %v allocations", mode, allocs)
			require.LessOrEqual(t, allocs, most)
		})
	}
}
