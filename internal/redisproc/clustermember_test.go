package redisproc_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
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

// testMigrateClusterSlot moves a slot holding keys by MigrateClusterSlot,
// given c's nodes by address, to another primary and back: c's own
// Primary and the keys follow, as with MigrateSlot; and it refuses what
// MigrateSlot refuses, or cannot do, before it changes anything.
func testMigrateClusterSlot(t *testing.T, c *redisproc.Cluster) {
	const tag, keys = "{members}", 150 // more than one batch of MIGRATE
	nodes := c.Nodes()
	members := make([]redisproc.ClusterMember, len(nodes))
	for i, n := range nodes {
		members[i] = redisproc.ClusterMember{Addr: n.Addr, Password: clusterPass, ID: do(t, n, "CLUSTER", "MYID").Str}
	}
	slot := cluster.Slot(tag)
	from, err := c.Primary(slot)
	require.NoError(t, err)
	home := slices.Index(nodes, from)
	to := -1
	for i, n := range nodes {
		if n != from && do(t, n, "ROLE").Elems[0].Str == "master" {
			to = i
			break
		}
	}
	require.GreaterOrEqual(t, to, 0)
	for i := range keys {
		require.Equal(t, "OK", do(t, from, "SET", fmt.Sprintf("%s:%d", tag, i), strconv.Itoa(i)).Str)
	}
	countKeys := func(s *redisproc.Server) int64 {
		return do(t, s, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)).Int
	}

	require.NoError(t, redisproc.MigrateClusterSlot(members, slot, to, 0))
	got, err := c.Primary(slot)
	require.NoError(t, err)
	require.Same(t, nodes[to], got, "the cluster's own Primary agrees")
	require.Equal(t, int64(keys), countKeys(nodes[to]))
	require.Zero(t, countKeys(from))
	movedTo(t, do(t, from, "GET", tag+":7"), slot, nodes[to].Addr)
	require.NoError(t, redisproc.MigrateClusterSlot(members, slot, to, 0), "to where it is already")

	noID := slices.Clone(members)
	noID[home].ID = ""
	wrongID := slices.Clone(members)
	replica := len(members) - 1
	wrongID[home].ID = members[replica].ID
	for _, tt := range []struct {
		name    string
		members []redisproc.ClusterMember
		slot    int
		to      int
		want    string
	}{
		{"a slot out of range", members, clusterSlotCount, home, "not in 0-16383"},
		{"a negative slot", members, -1, home, "not in 0-16383"},
		{"a member out of range", members, slot, len(members), "not a node of this cluster"},
		{"a negative member", members, slot, -1, "not a node of this cluster"},
		{"a member without its ID", noID, slot, home, "ID is not known"},
		{"a member with another's ID", wrongID, slot, home, "answers as node"},
		{"a replica", members, slot, replica, "is a replica"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, redisproc.MigrateClusterSlot(tt.members, tt.slot, tt.to, 0), tt.want)
			got, err := c.Primary(slot)
			require.NoError(t, err)
			require.Same(t, nodes[to], got, "the slot stayed")
		})
	}

	// Back by the cluster's own MigrateSlot, which agrees.
	require.NoError(t, c.MigrateSlot(slot, from))
	back, err := redisproc.ClusterPrimary(members, slot)
	require.NoError(t, err)
	require.Equal(t, home, back)
	require.Equal(t, int64(keys), countKeys(from))
	require.NoError(t, c.WaitHealthy(10*time.Second))
}

// clusterSlotCount is how many hash slots a Redis Cluster has.
const clusterSlotCount = 16384

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
