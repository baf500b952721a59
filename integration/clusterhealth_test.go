package integration_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// How a cluster of containers is judged healthy, from what its nodes say
// (CLUSTER INFO, CLUSTER NODES, INFO replication): the rules of
// redisproc's WaitHealthy, for nodes that redisproc did not start.

// acquainted returns nil once every node lists every other, past the
// handshake.
func (c *dockerCluster) acquainted() error {
	for i, s := range c.nodes {
		v, err := c.view(i)
		if err != nil {
			return err
		}
		for j, id := range c.ids {
			if l := v.nodes[id]; i != j && (l == nil || l.has("handshake") || l.has("noaddr")) {
				return fmt.Errorf("node %s does not know node %s yet", s.addr, c.nodes[j].addr)
			}
		}
	}
	return nil
}

// nodeReport is what one live node says about the cluster.
type nodeReport struct {
	srv   *dockerServer
	id    string
	state string    // cluster_state of CLUSTER INFO
	view  nodesView // CLUSTER NODES
	link  string    // master_link_status of INFO replication; "" on a primary
}

// survey asks every live node for its report.
func (c *dockerCluster) survey() ([]nodeReport, error) {
	var reports []nodeReport
	for i, s := range c.nodes {
		if c.killed[s] {
			continue
		}
		info, err := call(s.addr, "CLUSTER", "INFO")
		if err != nil {
			return nil, err
		}
		v, err := c.view(i)
		if err != nil {
			return nil, err
		}
		repl, err := call(s.addr, "INFO", "replication")
		if err != nil {
			return nil, err
		}
		reports = append(reports, nodeReport{
			srv: s, id: c.ids[i], view: v,
			state: infoField(info, "cluster_state"), link: infoField(repl, "master_link_status"),
		})
	}
	if len(reports) == 0 {
		return nil, errors.New("no node is running")
	}
	return reports, nil
}

// healthy returns nil if the reports, one from every live node, show the
// cluster settled, or else the first thing amiss.
func (c *dockerCluster) healthy(reports []nodeReport) error {
	live := map[string]bool{}
	for _, r := range reports {
		live[r.id] = true
	}
	var shape0 string
	for _, r := range reports {
		v := r.view
		switch {
		case v.self != r.id:
			return fmt.Errorf("node %s answers as node %s, not %s", r.srv.addr, v.self, r.id)
		case r.state != "ok":
			return fmt.Errorf("node %s says cluster_state:%s", r.srv.addr, r.state)
		}
		for _, o := range reports {
			l := v.nodes[o.id]
			switch {
			case o.id == r.id:
			case l == nil:
				return fmt.Errorf("node %s does not know node %s", r.srv.addr, o.srv.addr)
			case l.down():
				return fmt.Errorf("node %s holds node %s to be %s", r.srv.addr, o.srv.addr, l.flags)
			case !l.connected:
				return fmt.Errorf("node %s has no link to node %s", r.srv.addr, o.srv.addr)
			}
		}
		served := 0
		var shape []string
		for id, l := range v.nodes {
			if !live[id] {
				continue
			}
			if !l.isPrimary() {
				shape = append(shape, fmt.Sprintf("%s replicates %s", c.describe(id), c.describe(l.master)))
				continue
			}
			for _, sr := range l.slots {
				served += sr[1] - sr[0] + 1
				shape = append(shape, fmt.Sprintf("%d-%d: %s", sr[0], sr[1], c.describe(id)))
			}
		}
		if served != clusterSlots {
			return fmt.Errorf("node %s sees %d of the %d slots served by live primaries", r.srv.addr, served, clusterSlots)
		}
		if self := v.nodes[v.self]; !self.isPrimary() && r.link != "up" {
			return fmt.Errorf("replica %s has its link to its primary %s %s", r.srv.addr, c.describe(self.master), r.link)
		}
		sort.Strings(shape)
		if s := strings.Join(shape, "; "); shape0 == "" {
			shape0 = s
		} else if s != shape0 {
			return fmt.Errorf("node %s and node %s disagree on the cluster's shape:\n%s\n%s", reports[0].srv.addr, r.srv.addr, shape0, s)
		}
	}
	return nil
}

// shaped returns nil if every report shows the cluster as form made it:
// each primary serving its share of the slots, each replica replicating
// its primary.
func (c *dockerCluster) shaped(reports []nodeReport, replicasEach int) error {
	for _, r := range reports {
		for i, id := range c.ids {
			l := r.view.nodes[id]
			if l == nil {
				return fmt.Errorf("node %s does not know node %s", r.srv.addr, c.nodes[i].addr)
			}
			if i < c.primaries {
				lo, hi := c.primarySlots(i)
				if !l.isPrimary() || len(l.slots) != 1 || l.slots[0] != [2]int{lo, hi} {
					return fmt.Errorf("node %s does not see node %s as the primary of slots %d-%d yet", r.srv.addr, c.nodes[i].addr, lo, hi)
				}
			} else if p := (i - c.primaries) / replicasEach; l.master != c.ids[p] {
				return fmt.Errorf("node %s does not see node %s as a replica of node %s yet", r.srv.addr, c.nodes[i].addr, c.nodes[p].addr)
			}
		}
	}
	return nil
}

// view returns the CLUSTER NODES of node i.
func (c *dockerCluster) view(i int) (nodesView, error) {
	text, err := call(c.nodes[i].addr, "CLUSTER", "NODES")
	if err != nil {
		return nodesView{}, err
	}
	v, err := parseNodes(text)
	if err != nil {
		return nodesView{}, fmt.Errorf("node %s: %w", c.nodes[i].addr, err)
	}
	return v, nil
}

// nodesView is one node's account of the cluster: its CLUSTER NODES.
type nodesView struct {
	self  string                // the answering node's ID
	nodes map[string]*nodesLine // by ID
}

// nodesLine is one line of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
type nodesLine struct {
	id        string
	flags     string   // myself, master, slave, fail?, fail, handshake, noaddr, ..., comma-separated
	master    string   // the ID of a replica's primary; "" for a primary
	epoch     uint64   // its config epoch
	connected bool     // the answering node's link to it is up
	slots     [][2]int // the inclusive ranges it serves; slots being migrated are left out
}

func (l *nodesLine) has(flag string) bool { return slices.Contains(strings.Split(l.flags, ","), flag) }
func (l *nodesLine) isPrimary() bool      { return l.has("master") }

// down reports whether the answering node holds the line's node to be
// failing, suspects it, or has yet to get to know it.
func (l *nodesLine) down() bool {
	return l.has("fail") || l.has("fail?") || l.has("handshake") || l.has("noaddr")
}

// owner returns the primary that serves slot in this view, or nil.
func (v nodesView) owner(slot int) *nodesLine {
	for _, l := range v.nodes {
		for _, r := range l.slots {
			if l.isPrimary() && r[0] <= slot && slot <= r[1] {
				return l
			}
		}
	}
	return nil
}

// parseNodes parses the text of CLUSTER NODES.
func parseNodes(text string) (nodesView, error) {
	v := nodesView{nodes: map[string]*nodesLine{}}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nodesView{}, fmt.Errorf("CLUSTER NODES line %q has %d fields, not at least 8", line, len(f))
		}
		l := &nodesLine{id: f[0], flags: f[2], connected: f[7] == "connected"}
		if f[3] != "-" {
			l.master = f[3]
		}
		var err error
		if l.epoch, err = strconv.ParseUint(f[6], 10, 64); err != nil {
			return nodesView{}, fmt.Errorf("CLUSTER NODES line %q: config epoch: %w", line, err)
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // [slot->-id] migrating, [slot-<-id] importing
			}
			first, last, isRange := strings.Cut(s, "-")
			if !isRange {
				last = first
			}
			lo, err1 := strconv.Atoi(first)
			hi, err2 := strconv.Atoi(last)
			if err1 != nil || err2 != nil || lo < 0 || lo > hi || hi >= clusterSlots {
				return nodesView{}, fmt.Errorf("CLUSTER NODES line %q: bad slot range %q", line, s)
			}
			l.slots = append(l.slots, [2]int{lo, hi})
		}
		if l.has("myself") {
			v.self = l.id
		}
		v.nodes[l.id] = l
	}
	if v.self == "" {
		return nodesView{}, fmt.Errorf("CLUSTER NODES has no line flagged myself:\n%s", text)
	}
	return v, nil
}

// call sends one command to the node at addr and returns its reply's
// text, turning an error reply into an error; both name the node and the
// command.
func call(addr string, args ...string) (string, error) {
	v, err := doAt(addr, args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return "", fmt.Errorf("node %s: %q: %w", addr, args, err)
	}
	return v.Str, nil
}

// infoField returns the value of field in the text of INFO or CLUSTER
// INFO, or "".
func infoField(text, field string) string {
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// poll calls cond every clusterPoll until it returns nil, or returns its
// last error once timeout has passed.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(clusterPoll)
	}
}
