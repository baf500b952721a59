package redistest_test

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
)

// The cluster lives as long as the test, its helpers act through the
// Servers of Nodes, and once it is stopped they fail the test.
func TestStartCluster(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var c *redistest.Cluster
	r := record(t, func(r *recorder) { c = redistest.StartCluster(r, 2, 1) })
	defer r.runCleanups() // if the test fails before it runs them itself
	if r.skip != "" {
		t.Skip(r.skip)
	}
	require.Empty(t, r.fatal)
	nodes := c.Nodes()
	require.Len(t, nodes, 4)
	for i, n := range c.Nodes() {
		require.Same(t, nodes[i], n, "the same Servers every time")
		require.Equal(t, n.Addr, c.Seeds()[i])
	}

	const key = "k"
	slot := cluster.Slot(key)
	from := c.Primary(t, slot)
	require.Equal(t, "OK", from.Do(t, "SET", key, "v").Str)
	to := nodes[0]
	if to == from {
		to = nodes[1]
	}
	c.MigrateSlot(t, slot, to)
	require.Same(t, to, c.Primary(t, slot))
	require.Equal(t, "v", to.Do(t, "GET", key).Str)

	// A replica's crash leaves every slot served.
	replica := nodes[3]
	c.Kill(t, replica)
	c.WaitHealthy(t, 10*time.Second)
	replica.Restart(t)
	c.WaitHealthy(t, 10*time.Second)
	require.Equal(t, "slave", replica.Do(t, "ROLE").Elems[0].Str)

	r.runCleanups()
	for _, seed := range c.Seeds() {
		_, err := net.Dial("tcp", seed)
		require.Error(t, err, "nothing listens on %s after the cleanup", seed)
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, entries)

	for name, call := range map[string]func(r *recorder){
		"Primary":     func(r *recorder) { c.Primary(r, slot) },
		"Kill":        func(r *recorder) { c.Kill(r, nodes[0]) },
		"WaitHealthy": func(r *recorder) { c.WaitHealthy(r, 50*time.Millisecond) },
		"MigrateSlot": func(r *recorder) { c.MigrateSlot(r, slot, nodes[1]) },
	} {
		t.Run(name, func(t *testing.T) {
			r := record(t, func(r *recorder) {
				call(r)
				t.Errorf("%s returned", name)
			})
			require.NotEmpty(t, r.fatal)
			t.Log(r.fatal)
		})
	}
}
