package redistest

import (
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
)

// Cluster is a Redis Cluster started for one test with StartCluster. Its
// methods that take a testing.TB fail the test where redisproc's return an
// error; Seeds and Stop are redisproc's. Its nodes are Servers, whose Do,
// Restart and Pause work as on any other.
type Cluster struct {
	*redisproc.Cluster
	nodes []*Server // wrapping the nodes of Cluster, in its order
}

// StartCluster starts a Redis Cluster of primaries×(1+replicasEach) nodes
// for the test with redisproc.StartCluster, which documents its shape and
// settings, and returns once it is healthy. The cluster is stopped, and its
// files removed, at t.Cleanup. StartCluster skips the test if no
// redis-server is on PATH, or fails it if RequireRedisEnv is set to 1.
// Like t.Fatal, it must be called on the test's goroutine.
func StartCluster(t testing.TB, primaries, replicasEach int, opts ...Option) *Cluster {
	t.Helper()
	c, err := redisproc.StartCluster(primaries, replicasEach, opts...)
	SkipIfNoBinary(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	cl := &Cluster{Cluster: c}
	for _, s := range c.Nodes() {
		cl.nodes = append(cl.nodes, &Server{s})
	}
	return cl
}

// Nodes returns every node, in redisproc's order: the primaries as
// StartCluster made them, then the replicas of each in turn. Each call
// returns the same Servers.
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// Primary is redisproc's Cluster.Primary: the node that serves slot now.
// It calls t.Fatal if that cannot be found out or the node is down, so it
// must run on the test's goroutine.
func (c *Cluster) Primary(t testing.TB, slot int) *Server {
	t.Helper()
	s, err := c.Cluster.Primary(slot)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if n.Server == s {
			return n
		}
	}
	t.Fatalf("redistest: Primary of slot %d returned %s, which is not among Nodes", slot, s.Addr)
	return nil
}

// Kill is redisproc's Cluster.Kill: it crashes the node with SIGKILL; its
// Restart brings it back. It calls t.Fatal if the node is not running, so
// it must run on the test's goroutine.
func (c *Cluster) Kill(t testing.TB, s *Server) {
	t.Helper()
	if err := c.Cluster.Kill(s.Server); err != nil {
		t.Fatal(err)
	}
}

// WaitHealthy is redisproc's Cluster.WaitHealthy: it waits until every
// slot is served by a live primary and the live nodes agree on it. It
// calls t.Fatal, saying what was amiss, if the cluster has not settled
// within timeout, so it must run on the test's goroutine.
func (c *Cluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := c.Cluster.WaitHealthy(timeout); err != nil {
		t.Fatal(err)
	}
}

// MigrateSlot is redisproc's Cluster.MigrateSlot: it moves slot and its
// keys to the primary to. It calls t.Fatal if a step fails, so it must run
// on the test's goroutine.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	if err := c.Cluster.MigrateSlot(slot, to.Server); err != nil {
		t.Fatal(err)
	}
}

// MigrateSlotSlowly is redisproc's Cluster.MigrateSlotSlowly: it moves
// slot and its keys to the primary to, leaving the slot open for open
// first. It calls t.Fatal if a step fails, so it must run on the test's
// goroutine.
func (c *Cluster) MigrateSlotSlowly(t testing.TB, slot int, to *Server, open time.Duration) {
	t.Helper()
	if err := c.Cluster.MigrateSlotSlowly(slot, to.Server, open); err != nil {
		t.Fatal(err)
	}
}
