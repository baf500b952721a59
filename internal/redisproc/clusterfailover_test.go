package redisproc_test

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redisproc"
)

// A killed primary's replica takes over its slots, and the primary comes
// back as the replica of its successor: twice, so that the second
// failover promotes the node the first one killed. The nodes also listen
// on unix sockets and TLS ports, which change nothing in the cluster.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, 1, redisproc.WithUnixSocket(), redisproc.WithTLS())
	nodes := c.Nodes()
	for _, n := range nodes {
		dialPing(t, "unix", n.UnixSocket)
		dialPingTLS(t, n.TLSAddr, n.TLSConfig())
	}
	const key = "failover"
	slot := cluster.Slot(key)
	primary, err := c.Primary(slot)
	require.NoError(t, err)
	replica := nodes[3+slices.Index(nodes[:3], primary)]
	requireReplicaOf(t, replica, primary)
	require.Equal(t, "OK", do(t, primary, "SET", key, "v").Str)
	require.EqualValues(t, 1, do(t, primary, "WAIT", "1", "5000").Int, "the replica has the key")

	require.ErrorContains(t, c.Kill(&redisproc.Server{Addr: "127.0.0.1:1"}), "not a node of this cluster")

	for round := 1; round <= 2; round++ {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			require.NoError(t, c.Kill(primary))
			killed := time.Now()
			require.ErrorIs(t, c.Kill(primary), redisproc.ErrStopped, "killed already")
			_, err := c.Primary(slot)
			require.ErrorContains(t, err, "which is down", "not failed over yet")

			require.NoError(t, c.WaitHealthy(15*time.Second))
			t.Logf("the replica %s serves the slots of the primary %s %v after the kill (node timeout %v)",
				replica.Addr, primary.Addr, time.Since(killed).Round(time.Millisecond), redisproc.MemberNodeTimeout)
			got, err := c.Primary(slot)
			require.NoError(t, err)
			require.Same(t, replica, got)
			require.Equal(t, "v", do(t, replica, "GET", key).Str, "the key survived")
			require.Equal(t, "master", do(t, replica, "ROLE").Elems[0].Str)

			require.NoError(t, primary.Restart())
			restarted := time.Now()
			require.NoError(t, c.WaitHealthy(15*time.Second))
			t.Logf("the old primary was back as a replica, synced, %v after its restart",
				time.Since(restarted).Round(time.Millisecond))
			requireReplicaOf(t, primary, replica)
			primary, replica = replica, primary
		})
	}
}

// requireReplicaOf requires that ROLE on replica says it replicates
// primary, with the link up.
func requireReplicaOf(t *testing.T, replica, primary *redisproc.Server) {
	t.Helper()
	role := do(t, replica, "ROLE")
	require.Len(t, role.Elems, 5, "ROLE of %s: %s", replica.Addr, role)
	require.Equal(t, "slave", role.Elems[0].Str)
	require.Equal(t, primary.Addr, net.JoinHostPort(role.Elems[1].Str, strconv.FormatInt(role.Elems[2].Int, 10)))
	require.Equal(t, "connected", role.Elems[3].Str)
}
