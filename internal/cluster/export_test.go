package cluster

import "github.com/batonlock/baton/resp"

// SlotOwner returns the address of the primary c routes slot to, or "" when
// it knows none.
func (c *Client) SlotOwner(slot int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr, _ := c.topo.addrOf(slot)
	return addr
}

// ErrEmptyCommand is the error of a command with no arguments.
var ErrEmptyCommand = errEmptyCommand

// ErrNoSlots is the error of a topology in which no primary serves a slot.
var ErrNoSlots = errNoSlots

// ParseTopology parses v as a CLUSTER SHARDS reply, or as a CLUSTER SLOTS
// reply if slots is set, sent by the node at from, and builds the map.
func ParseTopology(v resp.Value, from string, slots bool) error {
	parse := parseShards
	if slots {
		parse = parseSlots
	}
	ranges, err := parse(v, from)
	if err != nil {
		return err
	}
	_, err = newTopology(ranges)
	return err
}
