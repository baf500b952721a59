package cluster

import (
	"errors"
	"math"
)

// errNoSlots is the error of a topology reply in which no online primary
// serves any slot: nothing could be routed by it.
var errNoSlots = errors.New("no online primary serves any slot")

// slotRange is the slots first to last, both included, served by the
// primary at addr ("host:port").
type slotRange struct {
	first, last int
	addr        string
}

// topology maps each slot to the address of the primary serving it.
type topology struct {
	// owner holds, for each slot, 1 + the index in addrs of its primary,
	// or 0 when no primary is known for the slot.
	owner [slotCount]uint16
	// addrs holds every primary's address once, in the reply's order.
	addrs []string
}

// newTopology builds the map of ranges. Two ranges claiming one slot make
// a protocol error: a node never reports a slot served twice. A reply with
// no ranges at all gives errNoSlots.
func newTopology(ranges []slotRange) (*topology, error) {
	if len(ranges) == 0 {
		return nil, errNoSlots
	}
	t := &topology{}
	index := make(map[string]uint16)
	for _, r := range ranges {
		i, ok := index[r.addr]
		if !ok {
			t.addrs = append(t.addrs, r.addr)
			i = uint16(len(t.addrs)) // at most one address per slot: no overflow
			index[r.addr] = i
		}
		for s := r.first; s <= r.last; s++ {
			if t.owner[s] != 0 {
				return nil, protocolError("slot %d is served by both %s and %s", s, t.addrs[t.owner[s]-1], r.addr)
			}
			t.owner[s] = i
		}
	}
	return t, nil
}

// addrOf returns the address of the primary serving slot, if one is known.
func (t *topology) addrOf(slot int) (string, bool) {
	if i := t.owner[slot]; i != 0 {
		return t.addrs[i-1], true
	}
	return "", false
}

// learn records that addr serves slot, as a MOVED reply said. A topology
// that already names math.MaxUint16 addresses learns no new one; the next
// refresh replaces it whole.
func (t *topology) learn(slot int, addr string) {
	for i, a := range t.addrs {
		if a == addr {
			t.owner[slot] = uint16(i + 1)
			return
		}
	}
	if len(t.addrs) >= math.MaxUint16 {
		return
	}
	t.addrs = append(t.addrs, addr)
	t.owner[slot] = uint16(len(t.addrs))
}
