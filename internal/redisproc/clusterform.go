package redisproc

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// clusterFormTimeout bounds each of FormCluster's waits: for every node to
// know every other, and for the cluster to be healthy. Beyond gossip,
// which takes a few hundred milliseconds, a primary stays at
// cluster_state:fail for 2s after it starts, so that it takes no writes
// before it has heard from its peers.
const clusterFormTimeout = 30 * time.Second

// FormCluster makes one cluster of primaries×(1+replicasEach) nodes that
// run with cluster-enabled yes and know nothing of each other yet, as
// StartCluster does with its own: it gives the nodes distinct config
// epochs, splits the 16384 slots evenly over the first primaries members,
// in order (CLUSTER ADDSLOTSRANGE: with 3 primaries, 0-5460, 5461-10921
// and 10922-16383), joins the nodes (CLUSTER MEET) and makes the others
// replicasEach replicas of each primary in turn (CLUSTER REPLICATE). It
// sets each member's ID, and returns once the cluster is healthy, as
// WaitClusterHealthy says, and shaped as it was made: two to three
// seconds, since a new primary keeps its cluster down for its first two.
// Every node must be live throughout.
func FormCluster(members []ClusterMember, primaries, replicasEach int) error {
	if err := formMembers(members, primaries, replicasEach); err != nil {
		return fmt.Errorf("redisproc: FormCluster: %w", err)
	}
	return nil
}

func formMembers(members []ClusterMember, primaries, replicasEach int) error {
	if primaries < 1 || primaries > clusterSlots || replicasEach < 0 || len(members) != primaries*(1+replicasEach) {
		return fmt.Errorf("%d nodes for %d primaries with %d replicas each: need 1 to %d primaries, no fewer than 0 replicas each, and a node for each",
			len(members), primaries, replicasEach, clusterSlots)
	}
	for i := range members {
		id, err := members[i].call("CLUSTER", "MYID")
		if err != nil {
			return err
		}
		members[i].ID = id.Str
		// Distinct config epochs from the start, as redis-cli gives
		// them, spare the primaries the rounds of bumping that resolve a
		// collision.
		if _, err := members[i].call("CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i := range primaries {
		lo, hi := primarySlots(i, primaries)
		if _, err := members[i].call("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return err
		}
	}
	for _, m := range members[1:] {
		host, port, err := net.SplitHostPort(m.Addr)
		if err != nil {
			return fmt.Errorf("node %s: %w", m.Addr, err)
		}
		if _, err := members[0].call("CLUSTER", "MEET", host, port); err != nil {
			return err
		}
	}
	// A replica must know its primary before it can replicate it.
	if err := poll(clusterFormTimeout, func() error { return acquainted(members) }); err != nil {
		return fmt.Errorf("the nodes did not all get to know each other within %v: %w", clusterFormTimeout, err)
	}
	for i := primaries; i < len(members); i++ {
		if _, err := members[i].call("CLUSTER", "REPLICATE", members[primaryOf(i, primaries, replicasEach)].ID); err != nil {
			return err
		}
	}
	err := poll(clusterFormTimeout, func() error {
		reports, err := survey(members)
		if err != nil {
			return err
		}
		if err := healthy(members, reports); err != nil {
			return err
		}
		return shaped(members, reports, primaries, replicasEach)
	})
	if err != nil {
		return fmt.Errorf("the cluster was not healthy within %v: %w", clusterFormTimeout, err)
	}
	return nil
}

// primarySlots returns the first and the last slot of primary i's share.
func primarySlots(i, primaries int) (lo, hi int) {
	return i * clusterSlots / primaries, (i+1)*clusterSlots/primaries - 1
}

// primaryOf returns the index of the primary that node i, a replica, was
// made to replicate.
func primaryOf(i, primaries, replicasEach int) int {
	return (i - primaries) / replicasEach
}

// acquainted returns nil once every node lists every other, past the
// handshake.
func acquainted(members []ClusterMember) error {
	for i, m := range members {
		v, err := m.view()
		if err != nil {
			return err
		}
		for j, o := range members {
			if e := v.node(o.ID); i != j && (e == nil || e.has("handshake") || e.has("noaddr")) {
				return fmt.Errorf("node %s does not know node %s yet", m.Addr, o.Addr)
			}
		}
	}
	return nil
}

// shaped returns nil if every report shows the cluster as formMembers made
// it: each primary serving its share of the slots, each replica
// replicating its primary.
func shaped(members []ClusterMember, reports []nodeReport, primaries, replicasEach int) error {
	for _, r := range reports {
		for i, m := range members {
			e := r.view.node(m.ID)
			if e == nil {
				return fmt.Errorf("node %s does not know node %s", r.member.Addr, m.Addr)
			}
			if i < primaries {
				lo, hi := primarySlots(i, primaries)
				if !e.isPrimary() || len(e.slots) != 1 || e.slots[0] != [2]int{lo, hi} {
					return fmt.Errorf("node %s does not see node %s as the primary of slots %d-%d yet", r.member.Addr, m.Addr, lo, hi)
				}
			} else if p := members[primaryOf(i, primaries, replicasEach)]; e.master != p.ID {
				return fmt.Errorf("node %s does not see node %s as a replica of node %s yet", r.member.Addr, m.Addr, p.Addr)
			}
		}
	}
	return nil
}
