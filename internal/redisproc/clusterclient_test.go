package redisproc_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// startCluster starts a cluster that is stopped at the test's cleanup,
// skipping the test, or failing it, as redistest does when there is no
// redis-server.
func startCluster(t *testing.T, primaries, replicasEach int, opts ...redisproc.Option) *redisproc.Cluster {
	t.Helper()
	begun := time.Now()
	c := redistest.StartCluster(t, primaries, replicasEach, opts...).Cluster
	t.Logf("a cluster of %d primaries with %d replicas each started in %v", primaries, replicasEach, time.Since(begun).Round(time.Millisecond))
	return c
}

// clusterDo sends one command to the node at addr, authenticating with
// pass unless it is "", and follows MOVED and ASK redirections, as a
// cluster client does. It returns the final reply and the redirections it
// followed, as "MOVED" and "ASK". It does not fail the test, so any
// goroutine may call it.
func clusterDo(addr, pass string, args ...string) (v resp.Value, redirects []string, err error) {
	asking := false
	for range 5 {
		if v, err = sendTo(addr, pass, asking, args); err != nil {
			return v, redirects, err
		}
		var kind string
		switch {
		case errors.Is(v.Err(), resp.Moved):
			kind, asking = "MOVED", false
		case errors.Is(v.Err(), resp.Ask):
			kind, asking = "ASK", true
		default:
			return v, redirects, nil
		}
		redirects = append(redirects, kind)
		// "MOVED <slot> <host:port>"
		f := strings.Fields(v.Str)
		if len(f) != 3 {
			return v, redirects, fmt.Errorf("redirection %q", v.Str)
		}
		addr = f[2]
	}
	return v, redirects, fmt.Errorf("%q: still redirected after 5 hops", args)
}

// sendTo sends args on a new connection to addr, preceded by AUTH pass
// unless pass is "", and by ASKING if asking, and returns its reply.
func sendTo(addr, pass string, asking bool, args []string) (resp.Value, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return resp.Value{}, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return resp.Value{}, err
	}
	var pre [][]string
	if pass != "" {
		pre = append(pre, []string{"AUTH", pass})
	}
	if asking {
		pre = append(pre, []string{"ASKING"})
	}
	var buf []byte
	for _, cmd := range append(pre, args) {
		buf = resp.AppendCommand(buf, cmd...)
	}
	if _, err := c.Write(buf); err != nil {
		return resp.Value{}, err
	}
	r := resp.NewReader(c)
	for range pre {
		if v, err := r.Read(); err != nil || v.Err() != nil {
			return v, errors.Join(err, v.Err())
		}
	}
	return r.Read()
}

// movedTo requires that v is a MOVED redirection of slot to addr.
func movedTo(t *testing.T, v resp.Value, slot int, addr string) {
	t.Helper()
	require.ErrorIs(t, v.Err(), resp.Moved, "reply %s", v)
	require.Equal(t, fmt.Sprintf("MOVED %d %s", slot, addr), v.Str)
}
