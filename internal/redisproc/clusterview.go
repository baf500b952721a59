package redisproc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// clusterView is one node's account of the cluster: its CLUSTER NODES
// reply, parsed.
type clusterView struct {
	self  string       // the answering node's ID
	nodes []*viewEntry // in the order of the reply
}

// viewEntry is one line of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
type viewEntry struct {
	id        string
	addr      string   // ip:port, without the bus port and host name
	flags     []string // myself, master, slave, fail?, fail, handshake, noaddr, ...
	master    string   // the ID of a replica's primary; "" for a primary
	epoch     uint64   // its config epoch
	connected bool     // the answering node's link to it is up
	slots     [][2]int // the inclusive ranges it serves; slots being imported or migrated are left out
}

// has reports whether the entry carries flag.
func (e *viewEntry) has(flag string) bool { return slices.Contains(e.flags, flag) }

// isPrimary reports whether the entry is a primary.
func (e *viewEntry) isPrimary() bool { return e.has("master") }

// down reports whether the answering node holds the entry's node to be
// failing, suspects it, or has yet to get to know it.
func (e *viewEntry) down() bool {
	return e.has("fail") || e.has("fail?") || e.has("handshake") || e.has("noaddr")
}

// parseClusterNodes parses the text of CLUSTER NODES.
func parseClusterNodes(text string) (clusterView, error) {
	var v clusterView
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return clusterView{}, fmt.Errorf("CLUSTER NODES line %q has %d fields, not at least 8", line, len(f))
		}
		e := &viewEntry{
			id:        f[0],
			flags:     strings.Split(f[2], ","),
			connected: f[7] == "connected",
		}
		e.addr, _, _ = strings.Cut(f[1], "@")
		e.addr, _, _ = strings.Cut(e.addr, ",")
		if f[3] != "-" {
			e.master = f[3]
		}
		var err error
		if e.epoch, err = strconv.ParseUint(f[6], 10, 64); err != nil {
			return clusterView{}, fmt.Errorf("CLUSTER NODES line %q: config epoch: %w", line, err)
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // [slot->-id] migrating, [slot-<-id] importing
			}
			r, err := parseSlotRange(s)
			if err != nil {
				return clusterView{}, fmt.Errorf("CLUSTER NODES line %q: %w", line, err)
			}
			e.slots = append(e.slots, r)
		}
		if e.has("myself") {
			v.self = e.id
		}
		v.nodes = append(v.nodes, e)
	}
	if v.self == "" {
		return clusterView{}, fmt.Errorf("CLUSTER NODES has no line flagged myself:\n%s", text)
	}
	return v, nil
}

// parseSlotRange parses "5461" or "0-5460".
func parseSlotRange(s string) ([2]int, error) {
	first, last, isRange := strings.Cut(s, "-")
	if !isRange {
		last = first
	}
	a, err1 := strconv.Atoi(first)
	b, err2 := strconv.Atoi(last)
	if err1 != nil || err2 != nil || a < 0 || a > b || b >= clusterSlots {
		return [2]int{}, fmt.Errorf("bad slot range %q", s)
	}
	return [2]int{a, b}, nil
}

// node returns the entry of the node with id, or nil.
func (v clusterView) node(id string) *viewEntry {
	for _, e := range v.nodes {
		if e.id == id {
			return e
		}
	}
	return nil
}

// owners returns, for every slot, the primary that serves it in this view,
// or nil.
func (v clusterView) owners() *[clusterSlots]*viewEntry {
	var owners [clusterSlots]*viewEntry
	for _, e := range v.nodes {
		if !e.isPrimary() {
			continue
		}
		for _, r := range e.slots {
			for slot := r[0]; slot <= r[1]; slot++ {
				owners[slot] = e
			}
		}
	}
	return &owners
}

// owner returns the primary that serves slot in this view, or nil.
func (v clusterView) owner(slot int) *viewEntry {
	for _, e := range v.nodes {
		if !e.isPrimary() {
			continue
		}
		for _, r := range e.slots {
			if r[0] <= slot && slot <= r[1] {
				return e
			}
		}
	}
	return nil
}
