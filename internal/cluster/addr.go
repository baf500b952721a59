package cluster

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Addresses come from the caller (seeds) and from the cluster's replies
// (topology, MOVED, ASK). Both are "host:port" and nothing else: a node is
// dialled by conn.NewClient, which would read a host such as "unix:///x"
// as a URL, so a reply that names one is refused rather than followed.

// nodeHost picks the host to reach a node by, from the endpoint the
// cluster prefers for it (its IP, host name or announced address, as the
// server's cluster-preferred-endpoint-type says), else its IP. Redis sends
// an empty (or null) endpoint and IP for a node that does not know its own
// address, as a lone node does: such a node is the one that answered, so
// its host is fromHost, the host the client asked. An endpoint of "?"
// means the server cannot say where the node is (it prefers host names and
// the node announced none); then only the IP can do, and without one the
// node cannot be reached.
func nodeHost(endpoint, ip, fromHost string) (string, bool) {
	switch {
	case endpoint != "" && endpoint != "?":
		return endpoint, true
	case ip != "" && ip != "?":
		return ip, true
	case endpoint == "?":
		return "", false
	default:
		return fromHost, true
	}
}

// checkHostField fails with a protocol error unless s, an endpoint or IP
// from a reply, is empty, "?" or a host.
func checkHostField(s, what string) error {
	if s == "" || s == "?" || validHost(s) {
		return nil
	}
	return protocolError("%s %q is not a host name or an IP address", what, s)
}

// validHost reports whether h is an IP address (IPv6 with or without a
// zone) or a host name: letters, digits, '-', '_' and '.', at most 253.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		switch b := h[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '-', b == '_', b == '.':
		default:
			return false
		}
	}
	return true
}

// checkSeed checks that a seed is "host:port" with a valid host and port.
func checkSeed(seed string) error {
	host, port, err := net.SplitHostPort(seed)
	if err != nil {
		return fmt.Errorf("cluster: seed %q: want host:port: %w", seed, err)
	}
	if !validHost(host) {
		return fmt.Errorf("cluster: seed %q: bad host %q", seed, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("cluster: seed %q: bad port %q", seed, port)
	}
	return nil
}

// splitAddr splits a "host:port" address that is known to be valid; a
// port it cannot read is 0.
func splitAddr(addr string) (host string, port int) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ = strconv.Atoi(p)
	return host, port
}
