package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
)

// A Do allocates nothing of its own once the connection is warm, but for
// the two allocations of context.AfterFunc when its context can end (the
// watch that lets it give up while it reads; see lead.go); a DoMulti
// allocates its replies.
func TestCallAllocations(t *testing.T) {
	redistest.SkipUnderRace(t)
	srv := redistest.Start(t)
	c := dial(t, srv.Addr)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, tc := range map[string]struct {
		ctx  context.Context
		most float64
		call func(ctx context.Context) error
	}{
		"Do, read by its caller": {context.Background(), 0, func(ctx context.Context) error {
			_, err := c.Do(ctx, "PING")
			return err
		}},
		"Do, whose context can end": {cancellable, 2, func(ctx context.Context) error {
			_, err := c.Do(ctx, "PING")
			return err
		}},
		"Do, with a reply deadline": {conn.WithReplyDeadline(context.Background(), time.Now().Add(time.Hour)), 0, func(ctx context.Context) error {
			_, err := c.Do(ctx, "PING")
			return err
		}},
		"DoMulti": {context.Background(), 1, func(ctx context.Context) error {
			_, err := c.DoMulti(ctx, []string{"PING"}, []string{"PING"})
			return err
		}},
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, tc.call(tc.ctx))
			allocs := testing.AllocsPerRun(500, func() { require.NoError(t, tc.call(tc.ctx)) })
			require.LessOrEqual(t, allocs, tc.most)
		})
	}
}
