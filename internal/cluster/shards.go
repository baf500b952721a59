package cluster

import (
	"fmt"
	"net"
	"strconv"

	"github.com/batonlock/baton/resp"
)

// shardNode is what parseShards keeps of one node of a CLUSTER SHARDS
// reply.
type shardNode struct {
	endpoint, ip  string // "" when the reply gives none, or null
	port, tlsPort int    // 0 when the reply gives none
	primary       bool
	online        bool
}

// parseShards reads a CLUSTER SHARDS reply (Redis 7 and later), sent by
// the node at from ("host:port"): an array of shards, each a map (RESP3)
// or an array of alternating names and values (RESP2) with "slots", a flat
// array of first, last, first, last, ... slot numbers, and "nodes", whose
// each node is such a map again. Fields it does not know are skipped, so
// that later versions may add some.
//
// Each shard's slots go to its first node whose role is "master" and whose
// health is "online" (a reply without the health field counts as online);
// a shard with no such node leaves its slots unmapped, as does one whose
// primary cannot be reached (see nodeHost). The primary's address is its
// host (see nodeHost) and a port chosen by tlsPorts.
func parseShards(v resp.Value, from string) ([]slotRange, error) {
	shards, err := list(v, "CLUSTER SHARDS reply")
	if err != nil {
		return nil, err
	}
	fromHost, fromPort := splitAddr(from)
	type shard struct {
		slots []int
		nodes []shardNode
	}
	parsed := make([]shard, 0, len(shards))
	var all []shardNode
	for i, sv := range shards {
		what := fmt.Sprintf("shard %d", i)
		fs, err := fields(sv, what)
		if err != nil {
			return nil, err
		}
		var sh shard
		for _, f := range fs {
			switch f.name {
			case "slots":
				if sh.slots, err = parseSlotList(f.value, what+" slots"); err != nil {
					return nil, err
				}
			case "nodes":
				elems, err := list(f.value, what+" nodes")
				if err != nil {
					return nil, err
				}
				sh.nodes = sh.nodes[:0]
				for j, nv := range elems {
					n, err := parseShardNode(nv, fmt.Sprintf("%s node %d", what, j))
					if err != nil {
						return nil, err
					}
					sh.nodes = append(sh.nodes, n)
				}
			}
		}
		parsed = append(parsed, sh)
		all = append(all, sh.nodes...)
	}

	useTLS := tlsPorts(all, fromPort)
	var ranges []slotRange
	for _, sh := range parsed {
		if len(sh.slots) == 0 {
			continue
		}
		addr, ok := "", false
		for _, n := range sh.nodes {
			if n.primary && n.online {
				addr, ok = n.addr(fromHost, useTLS)
				break
			}
		}
		if !ok {
			continue
		}
		for k := 0; k < len(sh.slots); k += 2 {
			ranges = append(ranges, slotRange{first: sh.slots[k], last: sh.slots[k+1], addr: addr})
		}
	}
	return ranges, nil
}

// parseSlotList reads a shard's flat array of first, last, first, last, ...
// slot numbers.
func parseSlotList(v resp.Value, what string) ([]int, error) {
	elems, err := list(v, what)
	if err != nil {
		return nil, err
	}
	if len(elems)%2 != 0 {
		return nil, protocolError("%s has %d numbers, not first and last pairs", what, len(elems))
	}
	out := make([]int, len(elems))
	for i, e := range elems {
		if out[i], err = number(e, what, 0, slotCount-1); err != nil {
			return nil, err
		}
		if i%2 == 1 && out[i] < out[i-1] {
			return nil, protocolError("%s: range %d-%d ends before it starts", what, out[i-1], out[i])
		}
	}
	return out, nil
}

// parseShardNode reads one node of a shard.
func parseShardNode(v resp.Value, what string) (shardNode, error) {
	fs, err := fields(v, what)
	if err != nil {
		return shardNode{}, err
	}
	n := shardNode{online: true}
	for _, f := range fs {
		fw := what + " " + f.name
		switch f.name {
		case "endpoint":
			if !f.value.IsNull() {
				if n.endpoint, err = textField(f.value, fw); err == nil {
					err = checkHostField(n.endpoint, fw)
				}
			}
		case "ip":
			if !f.value.IsNull() {
				if n.ip, err = textField(f.value, fw); err == nil {
					err = checkHostField(n.ip, fw)
				}
			}
		case "port":
			n.port, err = number(f.value, fw, 0, 65535)
		case "tls-port":
			n.tlsPort, err = number(f.value, fw, 0, 65535)
		case "role":
			var role string
			role, err = textField(f.value, fw)
			n.primary = role == "master"
		case "health":
			var health string
			health, err = textField(f.value, fw)
			n.online = health == "online"
		}
		if err != nil {
			return shardNode{}, err
		}
	}
	return n, nil
}

// tlsPorts decides which of a node's two ports the client dials: the
// tls-port when the node that answered was reached on some node's tls-port
// and on no node's port, else the port. The client thus keeps to the kind
// of port its seeds named, without having to be told whether its
// connections use TLS (that is in its conn.Options, which it cannot read).
// Redis lists the tls-port only when tls-cluster is on.
func tlsPorts(nodes []shardNode, fromPort int) bool {
	tls, plain := false, false
	for _, n := range nodes {
		tls = tls || (n.tlsPort != 0 && n.tlsPort == fromPort)
		plain = plain || (n.port != 0 && n.port == fromPort)
	}
	return tls && !plain
}

// addr returns where to dial n: nodeHost, and its tls-port or port as
// useTLS says, or the other one when it lists only that. A node with no
// host to reach it by, or no port, cannot be dialled.
func (n shardNode) addr(fromHost string, useTLS bool) (string, bool) {
	host, ok := nodeHost(n.endpoint, n.ip, fromHost)
	if !ok {
		return "", false
	}
	port := n.port
	if (useTLS && n.tlsPort != 0) || port == 0 {
		port = n.tlsPort
	}
	if port == 0 {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), true
}
