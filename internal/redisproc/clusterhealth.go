package redisproc

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonlock/baton/resp"
)

// WaitHealthy waits until the cluster has settled: every live node (one
// whose process runs and is not frozen by Pause) says cluster_state:ok,
// knows every other live node and holds none of them to be failing, every
// slot is served by a live primary, every live node agrees with the others
// on who serves which slot and who replicates whom, and every live
// replica's link to its primary is up. After a Kill of a primary, that is
// once one of its replicas has been promoted and serves its slots; after a
// Restart, once the node is back in the cluster, a primary that was failed
// over coming back as a replica of its successor, and has synced. It
// returns an error saying what was still amiss if the cluster has not
// settled within timeout; a cluster whose killed primary had no replica
// never does.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	return WaitClusterHealthy(c.members, timeout)
}

// WaitClusterHealthy is Cluster.WaitHealthy for any cluster: it waits
// until the members that are live have settled, as WaitHealthy says, and
// returns an error saying what was still amiss if they have not within
// timeout.
func WaitClusterHealthy(members []ClusterMember, timeout time.Duration) error {
	err := poll(timeout, func() error {
		reports, err := survey(members)
		if err != nil {
			return err
		}
		return healthy(members, reports)
	})
	if err != nil {
		return fmt.Errorf("redisproc: the cluster is not healthy after %v: %w", timeout, err)
	}
	return nil
}

// nodeReport is what one live node says about the cluster.
type nodeReport struct {
	member ClusterMember
	state  string      // cluster_state of CLUSTER INFO
	view   clusterView // CLUSTER NODES
	link   string      // master_link_status of INFO replication; "" on a primary
	// listed holds the IDs of the replicas CLUSTER SLOTS lists, for
	// clients to read from: those whose replication offset the node has
	// heard to be past 0.
	listed map[string]bool
}

// survey asks every live member for its report.
func survey(members []ClusterMember) ([]nodeReport, error) {
	var reports []nodeReport
	for _, m := range members {
		if !m.live() {
			continue
		}
		replies, err := exchange(m.Addr, m.Password, clusterQueryTimeout,
			[]string{"CLUSTER", "INFO"}, []string{"CLUSTER", "NODES"}, []string{"INFO", "replication"},
			[]string{"CLUSTER", "SLOTS"})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", m.Addr, err)
		}
		for _, v := range replies {
			if err := v.Err(); err != nil {
				return nil, fmt.Errorf("node %s: %w", m.Addr, err)
			}
		}
		view, err := parseClusterNodes(replies[1].Str)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", m.Addr, err)
		}
		reports = append(reports, nodeReport{
			member: m,
			state:  infoField(replies[0].Str, "cluster_state"),
			view:   view,
			link:   infoField(replies[2].Str, "master_link_status"),
			listed: listedReplicas(replies[3]),
		})
	}
	if len(reports) == 0 {
		return nil, errors.New("no node is running")
	}
	return reports, nil
}

// healthy returns nil if the reports, one from every live member, show the
// cluster settled, as WaitHealthy says, or else the first thing amiss.
func healthy(members []ClusterMember, reports []nodeReport) error {
	live := make(map[string]bool, len(reports))
	for _, r := range reports {
		live[r.member.ID] = true
	}
	var shape0 string
	for _, r := range reports {
		v, addr := r.view, r.member.Addr
		if v.self != r.member.ID {
			return fmt.Errorf("node %s answers as node %s, not %s", addr, v.self, r.member.ID)
		}
		if r.state != "ok" {
			return fmt.Errorf("node %s says cluster_state:%s", addr, r.state)
		}
		for _, o := range reports {
			e := v.node(o.member.ID)
			switch {
			case o.member.ID == r.member.ID:
			case e == nil:
				return fmt.Errorf("node %s does not know node %s", addr, o.member.Addr)
			case e.down():
				return fmt.Errorf("node %s holds node %s to be %s", addr, o.member.Addr, strings.Join(e.flags, ","))
			case !e.connected:
				return fmt.Errorf("node %s has no link to node %s", addr, o.member.Addr)
			}
		}
		owners := v.owners()
		for slot, o := range owners {
			switch {
			case o == nil:
				return fmt.Errorf("node %s sees nobody serving slot %d", addr, slot)
			case !live[o.id]:
				return fmt.Errorf("node %s sees slot %d served by %s, which is down", addr, slot, describe(members, o.id))
			case o.down():
				return fmt.Errorf("node %s sees slot %d served by %s, which it holds to be %s",
					addr, slot, describe(members, o.id), strings.Join(o.flags, ","))
			}
		}
		if self := v.node(v.self); !self.isPrimary() && r.link != "up" {
			return fmt.Errorf("replica %s has its link to its primary %s %s", addr, describe(members, self.master), r.link)
		}
		for _, o := range reports {
			if e := v.node(o.member.ID); !e.isPrimary() && !r.listed[o.member.ID] {
				return fmt.Errorf("node %s does not list replica %s in CLUSTER SLOTS", addr, o.member.Addr)
			}
		}
		desc := shape(members, v, owners, reports)
		if shape0 == "" {
			shape0 = desc
		} else if desc != shape0 {
			return fmt.Errorf("node %s and node %s disagree on the cluster's shape:\n%s\n%s",
				reports[0].member.Addr, addr, shape0, desc)
		}
	}
	return nil
}

// shape describes a view: who of the live nodes replicates whom, and who
// serves which slots. Views that agree describe alike.
func shape(members []ClusterMember, v clusterView, owners *[clusterSlots]*viewEntry, reports []nodeReport) string {
	var b strings.Builder
	for _, r := range reports {
		e := v.node(r.member.ID)
		if e.isPrimary() {
			fmt.Fprintf(&b, "%s primary; ", r.member.Addr)
		} else {
			fmt.Fprintf(&b, "%s replicates %s; ", r.member.Addr, describe(members, e.master))
		}
	}
	for lo := 0; lo < clusterSlots; {
		hi := lo
		for hi+1 < clusterSlots && owners[hi+1] == owners[lo] {
			hi++
		}
		fmt.Fprintf(&b, "%d-%d: %s; ", lo, hi, describe(members, owners[lo].id))
		lo = hi + 1
	}
	return b.String()
}

// listedReplicas returns the IDs of the replicas in a CLUSTER SLOTS reply:
// each range is start, end, the primary, then the replicas, each node an
// array of address, port, ID and more.
func listedReplicas(slots resp.Value) map[string]bool {
	listed := map[string]bool{}
	for _, r := range slots.Elems {
		if len(r.Elems) < 3 {
			continue
		}
		for _, n := range r.Elems[3:] {
			if len(n.Elems) >= 3 {
				listed[n.Elems[2].Str] = true
			}
		}
	}
	return listed
}
