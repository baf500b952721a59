package lock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
)

// An uncontended Lock and Unlock allocate at most this many times: the
// claim with its lease, its strings, the acquire's command, and the
// release's reply deadline, batch and replies; fair mode adds its waiter
// and the waiter's channel.
func TestLockUnlockAllocations(t *testing.T) {
	redistest.SkipUnderRace(t)
	srv := redistest.Start(t)
	for mode, most := range map[string]float64{"fast": 6, "fair": 8} {
		t.Run(mode, func(t *testing.T) {
			l := open(t, srv, modeOptions(mode)...)
			ctx := context.Background()
			allocs := testing.AllocsPerRun(200, func() {
				ls, err := l.Lock(ctx, "allocs")
				require.NoError(t, err)
				require.NoError(t, ls.Unlock(ctx))
			})
			t.Logf("%v allocations", allocs)
			require.LessOrEqual(t, allocs, most)
		})
	}
}
