package cluster

import (
	"fmt"
	"net"
	"strconv"

	"github.com/batonlock/baton/resp"
)

// parseSlots reads a CLUSTER SLOTS reply, the fallback for servers before
// Redis 7 that do not know CLUSTER SHARDS, sent by the node at from
// ("host:port"): an array of ranges, each an array of the first slot, the
// last slot, then the primary and its replicas, each an array of endpoint,
// port and, from some version on, more that is skipped. The server picks
// the port for the kind of connection that asked, TLS or not. The endpoint
// is read as nodeHost reads it, with no separate IP: null or empty means
// the node that answered, "?" a node that cannot be reached, whose range
// stays unmapped.
func parseSlots(v resp.Value, from string) ([]slotRange, error) {
	entries, err := list(v, "CLUSTER SLOTS reply")
	if err != nil {
		return nil, err
	}
	fromHost, _ := splitAddr(from)
	var ranges []slotRange
	for i, e := range entries {
		what := fmt.Sprintf("range %d", i)
		elems, err := list(e, what)
		if err != nil {
			return nil, err
		}
		if len(elems) < 3 {
			return nil, protocolError("%s has %d elements, not first slot, last slot and primary", what, len(elems))
		}
		first, err := number(elems[0], what+" first slot", 0, slotCount-1)
		if err != nil {
			return nil, err
		}
		last, err := number(elems[1], what+" last slot", int64(first), slotCount-1)
		if err != nil {
			return nil, err
		}
		primary, err := list(elems[2], what+" primary")
		if err != nil {
			return nil, err
		}
		if len(primary) < 2 {
			return nil, protocolError("%s primary has %d elements, not endpoint and port", what, len(primary))
		}
		endpoint := ""
		if !primary[0].IsNull() {
			if endpoint, err = textField(primary[0], what+" primary endpoint"); err != nil {
				return nil, err
			}
			if err := checkHostField(endpoint, what+" primary endpoint"); err != nil {
				return nil, err
			}
		}
		port, err := number(primary[1], what+" primary port", 1, 65535)
		if err != nil {
			return nil, err
		}
		host, ok := nodeHost(endpoint, "", fromHost)
		if !ok {
			continue
		}
		ranges = append(ranges, slotRange{first: first, last: last, addr: net.JoinHostPort(host, strconv.Itoa(port))})
	}
	return ranges, nil
}
