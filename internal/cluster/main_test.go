package cluster_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
)

// TestMain fails the run if any goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}

// timeout bounds every call of a test.
const timeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// newClient is cluster.New for a test: it fails the test on an error and
// closes the client when the test ends.
func newClient(t *testing.T, seeds []string, opts ...cluster.Option) *cluster.Client {
	t.Helper()
	c, err := cluster.New(testContext(t), seeds, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// RESP encoders for the fakes' scripted replies.

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func num(n int) string     { return ":" + strconv.Itoa(n) + "\r\n" }
func arr(elems ...string) string {
	return "*" + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}
func rmap(elems ...string) string { // RESP3 map of name, value pairs
	return "%" + strconv.Itoa(len(elems)/2) + "\r\n" + strings.Join(elems, "")
}

const (
	nilBulk = "$-1\r\n"
	null3   = "_\r\n"
	ok      = "+OK\r\n"
)

// errReply is an error reply.
func errReply(msg string) string { return "-" + msg + "\r\n" }

// hostPort splits a fake's address.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return host, p
}

// primary is a shard's online primary node in RESP2, at host:port.
func primary(host string, port int) string {
	return arr(bulk("id"), bulk("e2b9c3"), bulk("port"), num(port), bulk("ip"), bulk(host),
		bulk("endpoint"), bulk(host), bulk("role"), bulk("master"),
		bulk("replication-offset"), num(0), bulk("health"), bulk("online"))
}

// shard is a RESP2 shard of the given slot numbers (first, last, ...) and
// nodes.
func shard(slots []int, nodes ...string) string {
	s := make([]string, len(slots))
	for i, n := range slots {
		s[i] = num(n)
	}
	return arr(bulk("slots"), arr(s...), bulk("nodes"), arr(nodes...))
}

// allSlotsTo is a CLUSTER SHARDS reply giving every slot to addr.
func allSlotsTo(t *testing.T, addr string) string {
	host, port := hostPort(t, addr)
	return arr(shard([]int{0, 16383}, primary(host, port)))
}

// node is a fake cluster node that answers each command as its script
// says and records every command it reads, in order.
type node struct {
	*redistest.Fake

	mu     sync.Mutex
	script func(args []string) string // guarded by mu
	got    [][]string                 // guarded by mu
}

// cut, returned by a script, makes the node cut the connection instead
// of answering.
const cut = "<cut>"

// startNode starts a fake node. Until setScript, it answers nothing but
// HELLO, and cuts the connection at any other command.
func startNode(t *testing.T) *node {
	n := &node{script: func([]string) string { return cut }}
	n.Fake = redistest.NewFake(t, func(s *redistest.Session) {
		for {
			args, err := s.ReadCommand()
			if err != nil {
				return
			}
			n.mu.Lock()
			n.got = append(n.got, args)
			script := n.script
			n.mu.Unlock()
			reply := "%0\r\n" // HELLO's, for RESP3 clients: its content goes unread
			if !strings.EqualFold(args[0], "HELLO") {
				reply = script(args)
			}
			if reply == cut {
				s.Cut()
				return
			}
			if s.Send(reply) != nil {
				return
			}
		}
	})
	return n
}

func (n *node) setScript(script func(args []string) string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.script = script
}

// commands returns what the node has read so far, each command joined
// with spaces.
func (n *node) commands() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, len(n.got))
	for i, args := range n.got {
		out[i] = strings.Join(args, " ")
	}
	return out
}

// count returns how many of the node's commands are cmd.
func (n *node) count(cmd string) int {
	c := 0
	for _, got := range n.commands() {
		if got == cmd {
			c++
		}
	}
	return c
}

// isCommand reports whether args is the command cmd, given with spaces.
func isCommand(args []string, cmd string) bool {
	return slices.Equal(args, strings.Fields(cmd))
}

// wireLog records the client's socket writes through conn.WithTap.
type wireLog struct {
	mu     sync.Mutex
	writes []string // guarded by mu
}

func (w *wireLog) tap(dir conn.Direction, p []byte) {
	if dir != conn.Write {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
}

func (w *wireLog) Writes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}
