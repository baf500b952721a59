package redisproc_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
)

// testMembers runs the cluster checks on c's nodes described by address,
// as for a cluster redisproc did not start: they agree with c's own.
func testMembers(t *testing.T, c *redisproc.Cluster) {
	nodes := c.Nodes()
	members := make([]redisproc.ClusterMember, len(nodes))
	for i, n := range nodes {
		members[i] = redisproc.ClusterMember{Addr: n.Addr, Password: clusterPass, ID: do(t, n, "CLUSTER", "MYID").Str}
	}
	require.NoError(t, redisproc.WaitClusterHealthy(members, 5*time.Second))
	for _, slot := range []int{0, 5461, 16383} {
		want, err := c.Primary(slot)
		require.NoError(t, err)
		got, err := redisproc.ClusterPrimary(members, slot)
		require.NoError(t, err)
		require.Same(t, want, nodes[got], "slot %d", slot)
	}

	wrongID := slices.Clone(members)
	wrongID[0].ID = "not-its-id"
	noneLive := slices.Clone(members)
	for i := range noneLive {
		noneLive[i].Live = func() bool { return false }
	}
	healthy := func(m []redisproc.ClusterMember) error { return redisproc.WaitClusterHealthy(m, 0) }
	primary := func(slot int) func([]redisproc.ClusterMember) error {
		return func(m []redisproc.ClusterMember) error {
			_, err := redisproc.ClusterPrimary(m, slot)
			return err
		}
	}
	for _, tt := range []struct {
		name    string
		members []redisproc.ClusterMember
		check   func([]redisproc.ClusterMember) error
		want    string
	}{
		{"health with a wrong ID", wrongID, healthy, ", not not-its-id"},
		{"health with no live member", noneLive, healthy, "no node is running"},
		{"the primary with no live member", noneLive, primary(0), "no node is running"},
		{"the primary of a slot out of range", members, primary(16384), "not in 0-16383"},
		{"the primary, left out", members[1:], primary(0), "which is not one of the cluster's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, tt.check(tt.members), tt.want)
		})
	}
}

// FormCluster refuses a count of nodes that does not fit the shape asked
// for, before it asks any node anything.
func TestFormClusterRefusesAMisfit(t *testing.T) {
	member := redisproc.ClusterMember{Addr: "127.0.0.1:1"}
	for _, tt := range []struct {
		name                    string
		nodes, primaries, repls int
	}{
		{"no primaries", 2, 0, 1},
		{"negative replicas", 1, 1, -1},
		{"a node short", 3, 2, 1},
		{"a node over", 5, 2, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			members := slices.Repeat([]redisproc.ClusterMember{member}, tt.nodes)
			err := redisproc.FormCluster(members, tt.primaries, tt.repls)
			require.ErrorContains(t, err, "need 1 to 16384 primaries")
		})
	}
}
