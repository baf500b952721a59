package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/batonlock/baton/resp"
)

// redirect is a MOVED or ASK error reply, taken apart.
type redirect struct {
	ask  bool   // ASK: ask addr this once; else MOVED: addr serves the slot
	slot int    // the slot the command's keys hash to
	addr string // "host:port" of the node to send to
	err  error  // the reply as a *resp.Error, for the caller's error
}

// findRedirect returns the first MOVED reply among replies, else the first
// ASK reply, if any. A MOVED wins over an ASK because it changes the map;
// a batch on one slot gets one or the other. from is the address of the
// node that sent the replies: a redirect whose host is empty ("MOVED 3999
// :6381", which a node that does not know its own address sends) means
// that node's host. A redirect not shaped "MOVED <slot> <host>:<port>" is
// an error matching resp.ErrProtocol and the reply's prefix.
func findRedirect(replies []resp.Value, from string) (redirect, bool, error) {
	var found *resp.Error
	for _, r := range replies {
		err := r.Err()
		if err == nil {
			continue // most replies: no error to take apart, nothing to allocate
		}
		var e *resp.Error
		if !errors.As(err, &e) {
			continue
		}
		if errors.Is(e, resp.Moved) {
			found = e
			break
		}
		if found == nil && errors.Is(e, resp.Ask) {
			found = e
		}
	}
	if found == nil {
		return redirect{}, false, nil
	}
	rd, err := parseRedirect(found, from)
	if err != nil {
		return redirect{}, false, err
	}
	return rd, true, nil
}

// parseRedirect reads "MOVED <slot> <host>:<port>" or "ASK ...". Redis
// writes the host as is, so an IPv6 address comes without brackets: the
// port is after the last colon.
func parseRedirect(e *resp.Error, from string) (redirect, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %w: %s", resp.ErrProtocol, e, why)
	}
	parts := strings.Fields(e.Message)
	if len(parts) != 3 {
		return redirect{}, bad(`want "` + e.Prefix + ` <slot> <host>:<port>"`)
	}
	slot, err := strconv.Atoi(parts[1])
	if err != nil || slot < 0 || slot >= slotCount {
		return redirect{}, bad("bad slot")
	}
	colon := strings.LastIndexByte(parts[2], ':')
	if colon < 0 {
		return redirect{}, bad("no port")
	}
	host, portText := parts[2][:colon], parts[2][colon+1:]
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return redirect{}, bad("bad port")
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	switch {
	case host == "":
		host, _ = splitAddr(from)
	case host == "?":
		// The server prefers host names and the node announced none.
		return redirect{}, fmt.Errorf("%w: the server cannot say where the node is", e)
	case !validHost(host):
		return redirect{}, bad("bad host")
	}
	return redirect{
		ask:  errors.Is(e, resp.Ask),
		slot: slot,
		addr: net.JoinHostPort(host, strconv.Itoa(port)),
		err:  e,
	}, nil
}
