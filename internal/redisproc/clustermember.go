package redisproc

import (
	"fmt"
	"slices"

	"github.com/batonlock/baton/resp"
)

// ClusterMember is one node of a Redis Cluster as FormCluster,
// WaitClusterHealthy, ClusterPrimary and MigrateClusterSlot see it: an
// address to ask, not a process. Those checks, and the migration, are the
// ones Cluster runs on its own nodes, given to clusters this package did
// not start, containers say, so that both are judged by the same rules.
type ClusterMember struct {
	// Addr is the node's host:port: where this process reaches it, and
	// the address the cluster knows it by, where its peers reach it
	// (MigrateClusterSlot has the source MIGRATE keys to the target's).
	Addr string
	// Password, unless "", is sent with AUTH first.
	Password string
	// ID is the node's cluster ID (CLUSTER MYID); FormCluster sets it.
	ID string
	// Live reports whether the node can be asked now: it runs and is not
	// frozen. The checks leave out a node that is not, and count on its
	// peers to fail it over. Nil means always.
	Live func() bool
}

// live reports whether m can be asked now.
func (m ClusterMember) live() bool { return m.Live == nil || m.Live() }

// call sends one command to m and returns its reply, turning an error
// reply into an error, which names the node and the command.
func (m ClusterMember) call(args ...string) (resp.Value, error) {
	v, err := Do(m.Addr, m.Password, args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return resp.Value{}, fmt.Errorf("node %s: %q: %w", m.Addr, args, err)
	}
	return v, nil
}

// view returns the CLUSTER NODES of m.
func (m ClusterMember) view() (clusterView, error) {
	replies, err := exchange(m.Addr, m.Password, clusterQueryTimeout, []string{"CLUSTER", "NODES"})
	if err == nil {
		err = replies[0].Err()
	}
	if err != nil {
		return clusterView{}, fmt.Errorf("node %s: CLUSTER NODES: %w", m.Addr, err)
	}
	v, err := parseClusterNodes(replies[0].Str)
	if err != nil {
		return clusterView{}, fmt.Errorf("node %s: %w", m.Addr, err)
	}
	return v, nil
}

// memberIndex returns the position of the member with id, or -1.
func memberIndex(members []ClusterMember, id string) int {
	return slices.IndexFunc(members, func(m ClusterMember) bool { return m.ID == id })
}

// describe names the node with id by its address, if it is one of the
// members.
func describe(members []ClusterMember, id string) string {
	if i := memberIndex(members, id); i >= 0 {
		return members[i].Addr
	}
	return "node " + id
}
