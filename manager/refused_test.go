package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/resp"
)

// A write-back the server refuses (here: out of memory, under the
// noeviction policy that Open requires) writes nothing, and the lock is
// released in the same call, with or without hold: the error says what
// the server said, and matches neither conn.UncertainError nor
// lock.ErrNotHeld. Before, the lock stayed held for its TTL, or for ever
// under auto-extend.
func TestARefusedWriteBackReleasesTheLock(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		for _, hold := range []time.Duration{0, time.Minute} {
			name := mode
			if hold > 0 {
				name += "+hold"
			}
			t.Run(name, func(t *testing.T) {
				srv := redistest.Start(t)
				opts := []lock.Option{lock.WithTTL(30 * time.Second), lock.WithAutoExtend()}
				if mode == "fair" {
					opts = append(opts, lock.WithFair())
				}
				m := newManager(t, openLocker(t, srv, opts...), manager.WithHold(hold))
				srv.Do(t, "CONFIG", "SET", "maxmemory-policy", "noeviction")
				t.Cleanup(func() { srv.Do(t, "CONFIG", "SET", "maxmemory", "0") })
				require.NoError(t, m.Modify(context.Background(), "t", increment))

				err := m.Modify(context.Background(), "t", func(c *counter) error {
					srv.Do(t, "CONFIG", "SET", "maxmemory", "1") // every write that adds memory is refused now
					c.N++
					return nil
				})
				var refused *resp.Error
				require.ErrorAs(t, err, &refused)
				require.False(t, errors.As(err, new(*conn.UncertainError)), "%v", err)
				require.NotErrorIs(t, err, lock.ErrNotHeld)
				srv.Do(t, "CONFIG", "SET", "maxmemory", "0")
				require.Zero(t, srv.Do(t, "EXISTS", "baton:{t}").Int, "the lock is still held after a refused write-back")
				state, err := m.Get(context.Background(), "t")
				require.NoError(t, err)
				require.Equal(t, 1, state.N, "the refused write-back wrote")
			})
		}
	}
}
