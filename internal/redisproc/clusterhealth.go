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
	err := poll(timeout, func() error {
		reports, err := c.survey()
		if err != nil {
			return err
		}
		return c.healthy(reports)
	})
	if err != nil {
		return fmt.Errorf("redisproc: the cluster is not healthy after %v: %w", timeout, err)
	}
	return nil
}

// nodeReport is what one live node says about the cluster.
type nodeReport struct {
	srv   *Server
	id    string      // the node's ID, as StartCluster learned it
	state string      // cluster_state of CLUSTER INFO
	view  clusterView // CLUSTER NODES
	link  string      // master_link_status of INFO replication; "" on a primary
	// listed holds the IDs of the replicas CLUSTER SLOTS lists, for
	// clients to read from: those whose replication offset the node has
	// heard to be past 0.
	listed map[string]bool
}

// survey asks every live node for its report.
func (c *Cluster) survey() ([]nodeReport, error) {
	var reports []nodeReport
	for i, s := range c.nodes {
		if !s.answering() {
			continue
		}
		replies, err := exchange(s.Addr, s.password, clusterQueryTimeout,
			[]string{"CLUSTER", "INFO"}, []string{"CLUSTER", "NODES"}, []string{"INFO", "replication"},
			[]string{"CLUSTER", "SLOTS"})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", s.Addr, err)
		}
		for _, v := range replies {
			if err := v.Err(); err != nil {
				return nil, fmt.Errorf("node %s: %w", s.Addr, err)
			}
		}
		view, err := parseClusterNodes(replies[1].Str)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", s.Addr, err)
		}
		reports = append(reports, nodeReport{
			srv:    s,
			id:     c.ids[i],
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

// healthy returns nil if the reports, one from every live node, show the
// cluster settled, as WaitHealthy says, or else the first thing amiss.
func (c *Cluster) healthy(reports []nodeReport) error {
	live := make(map[string]bool, len(reports))
	for _, r := range reports {
		live[r.id] = true
	}
	var shape0 string
	for _, r := range reports {
		v := r.view
		if v.self != r.id {
			return fmt.Errorf("node %s answers as node %s, not %s", r.srv.Addr, v.self, r.id)
		}
		if r.state != "ok" {
			return fmt.Errorf("node %s says cluster_state:%s", r.srv.Addr, r.state)
		}
		for _, o := range reports {
			e := v.node(o.id)
			switch {
			case o.id == r.id:
			case e == nil:
				return fmt.Errorf("node %s does not know node %s", r.srv.Addr, o.srv.Addr)
			case e.down():
				return fmt.Errorf("node %s holds node %s to be %s", r.srv.Addr, o.srv.Addr, strings.Join(e.flags, ","))
			case !e.connected:
				return fmt.Errorf("node %s has no link to node %s", r.srv.Addr, o.srv.Addr)
			}
		}
		owners := v.owners()
		for slot, o := range owners {
			switch {
			case o == nil:
				return fmt.Errorf("node %s sees nobody serving slot %d", r.srv.Addr, slot)
			case !live[o.id]:
				return fmt.Errorf("node %s sees slot %d served by %s, which is down", r.srv.Addr, slot, c.describe(o.id))
			case o.down():
				return fmt.Errorf("node %s sees slot %d served by %s, which it holds to be %s",
					r.srv.Addr, slot, c.describe(o.id), strings.Join(o.flags, ","))
			}
		}
		if self := v.node(v.self); !self.isPrimary() && r.link != "up" {
			return fmt.Errorf("replica %s has its link to its primary %s %s", r.srv.Addr, c.describe(self.master), r.link)
		}
		for _, o := range reports {
			if e := v.node(o.id); !e.isPrimary() && !r.listed[o.id] {
				return fmt.Errorf("node %s does not list replica %s in CLUSTER SLOTS", r.srv.Addr, o.srv.Addr)
			}
		}
		shape := c.shape(v, owners, reports)
		if shape0 == "" {
			shape0 = shape
		} else if shape != shape0 {
			return fmt.Errorf("node %s and node %s disagree on the cluster's shape:\n%s\n%s",
				reports[0].srv.Addr, r.srv.Addr, shape0, shape)
		}
	}
	return nil
}

// shape describes a view: who of the live nodes replicates whom, and who
// serves which slots. Views that agree describe alike.
func (c *Cluster) shape(v clusterView, owners *[clusterSlots]*viewEntry, reports []nodeReport) string {
	var b strings.Builder
	for _, r := range reports {
		e := v.node(r.id)
		if e.isPrimary() {
			fmt.Fprintf(&b, "%s primary; ", r.srv.Addr)
		} else {
			fmt.Fprintf(&b, "%s replicates %s; ", r.srv.Addr, c.describe(e.master))
		}
	}
	for lo := 0; lo < clusterSlots; {
		hi := lo
		for hi+1 < clusterSlots && owners[hi+1] == owners[lo] {
			hi++
		}
		fmt.Fprintf(&b, "%d-%d: %s; ", lo, hi, c.describe(owners[lo].id))
		lo = hi + 1
	}
	return b.String()
}

// describe names the node with id by its address, if it is one of the
// cluster's.
func (c *Cluster) describe(id string) string {
	if s := c.byID(id); s != nil {
		return s.Addr
	}
	return "node " + id
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

// view returns the CLUSTER NODES of s.
func (c *Cluster) view(s *Server) (clusterView, error) {
	replies, err := exchange(s.Addr, s.password, clusterQueryTimeout, []string{"CLUSTER", "NODES"})
	if err == nil {
		err = replies[0].Err()
	}
	if err != nil {
		return clusterView{}, fmt.Errorf("node %s: CLUSTER NODES: %w", s.Addr, err)
	}
	v, err := parseClusterNodes(replies[0].Str)
	if err != nil {
		return clusterView{}, fmt.Errorf("node %s: %w", s.Addr, err)
	}
	return v, nil
}
