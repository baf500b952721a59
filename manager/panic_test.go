package manager_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// brittle is JSON that panics in Encode while armed.
type brittle struct{ armed *atomic.Bool }

func (b brittle) Encode(v *counter) ([]byte, error) {
	if b.armed.Load() {
		panic("encode broke")
	}
	return json.Marshal(v)
}

func (brittle) Decode(data []byte, v *counter) error { return json.Unmarshal(data, v) }

// TestAPanicReleasesOnEveryPath: a panic in fn or in the codec's Encode
// releases the lock before it goes on, whether the Modify holds or not,
// and whether it acquired the lock or found it held, in both lock modes.
// The lock's TTL (30s) is far longer than the test: only the release can
// free it.
func TestAPanicReleasesOnEveryPath(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, mode := range []string{"fast", "fair"} {
		lockOpts := []lock.Option{lock.WithTTL(30 * time.Second)}
		if mode == "fair" {
			lockOpts = append(lockOpts, lock.WithFair())
		}
		for _, path := range []string{"no hold", "hold, first Modify", "hold, held Modify"} {
			for _, where := range []string{"fn", "codec"} {
				t.Run(mode+"/"+path+"/"+where, func(t *testing.T) {
					srv.Do(t, "FLUSHALL")
					var armed atomic.Bool
					opts := []manager.Option{manager.WithCodec[counter](brittle{&armed})}
					if path != "no hold" {
						opts = append(opts, manager.WithHold(time.Hour))
					}
					m := newManager(t, openLocker(t, srv, lockOpts...), opts...)
					require.NoError(t, m.Modify(ctx, "k", increment))
					if path == "hold, held Modify" {
						require.Equal(t, int64(1), srv.Do(t, "EXISTS", "baton:{k}").Int, "held")
					} else {
						// Let go, so that the next Modify acquires.
						require.NoError(t, m.Close())
						m = newManager(t, openLocker(t, srv, lockOpts...), opts...)
					}
					fn, value := increment, any("encode broke")
					if where == "fn" {
						fn, value = func(*counter) error { panic("fn broke") }, "fn broke"
					}
					armed.Store(where == "codec")
					require.PanicsWithValue(t, value, func() { _ = m.Modify(ctx, "k", fn) })
					require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the panic left the lock held")
					requireReleased(t, openLocker(t, srv, lockOpts...), "k")
					require.JSONEq(t, `{"n":1}`, srv.Do(t, "GET", "baton:{k}:state").Str, "nothing written")

					armed.Store(false)
					require.NoError(t, m.Modify(ctx, "k", increment), "the Manager goes on")
					require.JSONEq(t, `{"n":2}`, srv.Do(t, "GET", "baton:{k}:state").Str)
				})
			}
		}
	}
}
