package runkeys_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/internal/runkeys"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}

func TestPrefixesDiffer(t *testing.T) {
	a, err := runkeys.NewPrefix("baton:demo:")
	require.NoError(t, err)
	b, err := runkeys.NewPrefix("baton:demo:")
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	require.Regexp(t, `^baton:demo:[0-9a-f]{16}:$`, a)
}

// TestRemoveDeletesTheRunsKeysAlone: every key under the prefix goes,
// over several SCAN pages and hash tags; a neighbour's keys stay, even one
// whose name starts like the prefix without its colon.
func TestRemoveDeletesTheRunsKeysAlone(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	prefix, err := runkeys.NewPrefix("baton:test:")
	require.NoError(t, err)
	c, err := conn.Dial(ctx, srv.Addr)
	require.NoError(t, err)
	defer c.Close()
	const n = 2500 // more than one page of SCAN
	for i := range n {
		srv.Do(t, "SET", prefix+"{"+strconv.Itoa(i)+"}", "v")
	}
	srv.Do(t, "SET", "baton:test:other", "v")
	srv.Do(t, "SET", prefix[:len(prefix)-1], "v")

	removed, err := runkeys.Remove(ctx, c, prefix)
	require.NoError(t, err)
	require.Equal(t, n, removed)
	require.EqualValues(t, 2, srv.Do(t, "DBSIZE").Int)

	removed, err = runkeys.Remove(ctx, c, prefix)
	require.NoError(t, err)
	require.Zero(t, removed)
}
