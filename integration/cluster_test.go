package integration_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// clusterNode is one node of a cluster under test.
type clusterNode interface {
	// Addr is the node's host:port, where the test's host reaches it
	// and where the cluster tells clients to find it; it stays the same
	// across Restart.
	Addr() string
	// Do sends one command to the node as the default user, on a
	// connection of its own; an error reply is a Value.
	Do(t testing.TB, args ...string) resp.Value
}

// clusterUnderTest is a Redis Cluster under test: redis-server processes
// on loopback, or containers on a Docker network of their own. Its methods
// that take a testing.TB fail the test when they cannot do their job; like
// t.Fatal they must be called on the test's goroutine.
type clusterUnderTest interface {
	// URL is what lock.Open takes: redis+cluster:// and every node's Addr.
	URL() string
	// Nodes returns every node: the primaries as the cluster was formed,
	// in the order of their slots (with 3, 0-5460, 5461-10921 and
	// 10922-16383), then the replicas of each primary in turn. Which node
	// is a primary changes with failovers; the order does not.
	Nodes() []clusterNode
	// Primary returns the node that serves slot now, as soon as it has
	// taken the slot; the test fails if that node is down (killed and
	// not yet failed over).
	Primary(t testing.TB, slot int) clusterNode
	// Kill crashes n with SIGKILL, which leaves it no chance to tell
	// anyone, and returns once it is gone. Its peers find out after the
	// node timeout (500ms) and, if it was a primary, promote its replica.
	Kill(t testing.TB, n clusterNode)
	// Restart starts a killed node again, without its data but with its
	// cluster configuration, and returns once it answers PING: it
	// rejoins as itself, a primary that was failed over as a replica of
	// its successor, and resyncs (WaitHealthy waits for that).
	Restart(t testing.TB, n clusterNode)
	// MigrateSlot moves slot, with its keys, from the primary that
	// serves it to to, a primary, as redisproc.Cluster.MigrateSlot does
	// (CLUSTER SETSLOT IMPORTING and MIGRATING, MIGRATE in batches, then
	// SETSLOT NODE everywhere), and returns once every live node says to
	// serves it. Clients may go on using the slot's keys meanwhile; they
	// meet ASK, TRYAGAIN and then MOVED. The slot stays open (importing
	// and migrating) for open before its keys move, as a reshard of a
	// slot with many keys leaves it: TRYAGAIN all that time to a script
	// whose keys are partly there.
	MigrateSlot(t testing.TB, slot int, to clusterNode, open time.Duration)
	// WaitHealthy waits until the cluster has settled, as
	// redisproc.Cluster.WaitHealthy says: every live node says
	// cluster_state:ok and holds no live node to be failing, every slot
	// is served by a live primary, the live nodes agree on who serves
	// which slot and who replicates whom, and every live replica's link
	// to its primary is up.
	WaitHealthy(t testing.TB, timeout time.Duration)
}

const (
	// clusterSettle bounds the wait for a cluster to settle after a
	// failover or a node's return: at a node timeout of 500ms a failover
	// takes about two seconds.
	clusterSettle = 15 * time.Second
	// clusterIdle is how long each mode contends on a healthy cluster.
	clusterIdle = 3 * time.Second
	// ackTimeout is the timeout of WithReplicaAck in the failover test.
	ackTimeout = 500 * time.Millisecond
)

// processCluster is a cluster of redis-server processes started by
// redistest.
type processCluster struct {
	c     *redistest.Cluster
	nodes []clusterNode // a processServer per node of c, in its order
}

func startProcessCluster(t *testing.T, primaries, replicasEach int, opts ...redistest.Option) clusterUnderTest {
	t.Helper()
	c := redistest.StartCluster(t, primaries, replicasEach, opts...)
	p := &processCluster{c: c}
	for _, s := range c.Nodes() {
		p.nodes = append(p.nodes, processServer{s})
	}
	return p
}

func (p *processCluster) URL() string          { return clusterURL(p.c.Seeds()) }
func (p *processCluster) Nodes() []clusterNode { return append([]clusterNode(nil), p.nodes...) }

func (p *processCluster) Primary(t testing.TB, slot int) clusterNode {
	t.Helper()
	s := p.c.Primary(t, slot)
	for _, n := range p.nodes {
		if n.(processServer).Server == s {
			return n
		}
	}
	t.Fatalf("slot %d is served by %s, which is none of the cluster's nodes", slot, s.Addr)
	return nil
}

func (p *processCluster) Kill(t testing.TB, n clusterNode) {
	t.Helper()
	p.c.Kill(t, p.node(t, n).Server)
}

func (p *processCluster) Restart(t testing.TB, n clusterNode) {
	t.Helper()
	p.node(t, n).Restart(t)
}

func (p *processCluster) MigrateSlot(t testing.TB, slot int, to clusterNode, open time.Duration) {
	t.Helper()
	p.c.MigrateSlotSlowly(t, slot, p.node(t, to).Server, open)
}

func (p *processCluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	p.c.WaitHealthy(t, timeout)
}

func (p *processCluster) node(t testing.TB, n clusterNode) processServer {
	t.Helper()
	s, ok := n.(processServer)
	if !ok {
		t.Fatalf("%s is not a node of this cluster", n.Addr())
	}
	return s
}

// clusterURL is the URL lock.Open takes for a cluster with these nodes.
func clusterURL(addrs []string) string {
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// tokenSlot is the hash slot of a token's lock, and of its state.
func tokenSlot(token string) int { return cluster.Slot("baton:{" + token + "}") }

// spread names m's run so that its tokens live on every primary of c, at
// least a quarter of their share on each, and returns the name with the
// node that serves each token now.
func spread(t *testing.T, c clusterUnderTest, m mix, primaries int) (mix, map[string]clusterNode) {
	t.Helper()
	base := strconv.FormatInt(time.Now().UnixNano(), 36)
	bySlot := map[int]clusterNode{}
	for attempt := range 50 {
		m.run = base + strconv.Itoa(attempt) + "-"
		owners := map[string]clusterNode{}
		per := map[string]int{}
		for i := range m.tokens {
			token := m.token(i)
			slot := tokenSlot(token)
			if bySlot[slot] == nil {
				bySlot[slot] = c.Primary(t, slot)
			}
			owners[token] = bySlot[slot]
			per[owners[token].Addr()]++
		}
		enough := len(per) == primaries
		for _, n := range per {
			enough = enough && n >= max(1, m.tokens/primaries/4)
		}
		if enough {
			t.Logf("%s: tokens per primary %v", m, per)
			return m, owners
		}
	}
	t.Fatalf("no run name among 50 spreads %d tokens over %d primaries", m.tokens, primaries)
	return m, nil
}

// TestContentionOnACluster runs the contention workload, both modes, on
// a Redis Cluster of three primaries with a replica each, its tokens
// spread over the three: every lock and state lives on its slot's
// primary, waiters listen on that primary, and the history stays
// linearizable, with no overlapping leases and fencing tokens increasing,
// as on a lone server. Every primary must have served some of the work.
func TestContentionOnACluster(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		c := b.startCluster(t, 3, 1)
		for _, m := range []mix{defaultMix, withFair(defaultMix)} {
			t.Run(m.String(), func(t *testing.T) {
				m, owners := spread(t, c, m, 3)
				v := contention(t, c.URL(), m, 2, idle(clusterIdle))
				ok := map[string]int{}
				for _, op := range v.history.modifies {
					if op.outcome == outcomeOK {
						ok[owners[op.token].Addr()]++
					}
				}
				t.Logf("%s: Modify calls that succeeded, per primary: %v", m, ok)
				require.Len(t, ok, 3, "every primary served some of the work")
			})
		}
	})
}
