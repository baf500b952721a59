package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/batonlock/baton/resp"
)

const (
	// clusterFormTimeout bounds each of StartCluster's waits: for every
	// node to know every other, and for the cluster to be healthy. Beyond
	// gossip, which takes a few hundred milliseconds, a primary stays at
	// cluster_state:fail for 2s after it starts, so that it takes no
	// writes before it has heard from its peers.
	clusterFormTimeout = 30 * time.Second
	// clusterPoll is the pause between two looks at the cluster.
	clusterPoll = 20 * time.Millisecond
	// clusterQueryTimeout bounds one look at one node, which answers in
	// well under a millisecond unless it is stalled.
	clusterQueryTimeout = time.Second
)

// Cluster is a Redis Cluster of redis-server processes, started by
// StartCluster: primaries serving the 16384 slots between them, each with
// its replicas. Its nodes are Servers, whose Do, Restart, Pause and Resume
// work as on any other; Stop them through the Cluster. Its methods are safe
// for concurrent use, but two MigrateSlots of the same slot, or a
// MigrateSlot during a failover, leave the slot as the cluster makes of
// them.
type Cluster struct {
	// Set by StartCluster, read-only afterwards.
	dir       string    // holds every node's directory
	nodes     []*Server // the primaries, then the replicas of each primary in turn
	ids       []string  // the nodes' IDs, in the order of nodes
	primaries int

	mu      sync.Mutex // serializes Stop
	stopped bool       // guarded by mu
}

// StartCluster starts primaries×(1+replicasEach) redis-server processes
// from PATH with cluster-enabled yes, each in a directory of its own under
// one temporary directory, on loopback ports that were free, all at most
// 55535 since each node's cluster bus listens 10000 above. It then joins
// them into one cluster (CLUSTER MEET), splits the 16384 slots evenly over
// the primaries, in order (CLUSTER ADDSLOTSRANGE: with 3 primaries, 0-5460,
// 5461-10921 and 10922-16383), and makes replicasEach replicas of each
// primary (CLUSTER REPLICATE). It returns once every node says
// cluster_state:ok, every node knows every other and agrees with it on who
// serves which slot and who replicates whom, and every replica's link to
// its primary is up: two to three seconds, since a new primary keeps its
// cluster down for its first two.
//
// Every node runs with the options given (WithCluster is implied and
// ignored; with WithTLS each node has a TLS port of its own besides, but
// the cluster bus, replication and the addresses the cluster hands out
// stay plain) and with MemberNodeTimeout, the sync settings that keep a
// replica's full sync quick and off the disk, and no replica migration,
// all of which a WithConfig line may override. A requirepass line also
// becomes every node's masterauth, so that replication works, and Do and
// MigrateSlot authenticate with it.
//
// On failure nothing StartCluster made is left running or on disk; the
// error wraps ErrNoBinary when there is no redis-server to run. The caller
// must call Stop.
func StartCluster(primaries, replicasEach int, opts ...Option) (*Cluster, error) {
	if primaries < 1 || primaries > clusterSlots || replicasEach < 0 {
		return nil, fmt.Errorf("redisproc: StartCluster(%d, %d): need 1 to %d primaries and no fewer than 0 replicas each",
			primaries, replicasEach, clusterSlots)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoBinary, err)
	}
	var conf config
	for _, o := range opts {
		o(&conf)
	}
	conf.cluster = clusterMember
	dir, err := makeDir("redisproc-cluster")
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	c := &Cluster{dir: dir, primaries: primaries}
	if err := c.start(bin, conf, primaries*(1+replicasEach)); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redisproc: StartCluster: %w", err)
	}
	if err := c.form(replicasEach); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redisproc: StartCluster: %w", err)
	}
	return c, nil
}

// start starts n nodes that know nothing of each other yet.
func (c *Cluster) start(bin string, conf config, n int) error {
	for i := range n {
		// Short names keep unix socket paths short.
		dir := filepath.Join(c.dir, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		s, err := start(bin, dir, conf)
		if err != nil {
			return fmt.Errorf("node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, s)
	}
	return nil
}

// form makes a cluster of the nodes that start started, and waits until it
// is in shape.
func (c *Cluster) form(replicasEach int) error {
	for i, s := range c.nodes {
		id, err := call(s, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		c.ids = append(c.ids, id.Str)
		// Distinct config epochs from the start, as redis-cli gives
		// them, spare the primaries the rounds of bumping that
		// resolve a collision.
		if _, err := call(s, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i := range c.primaries {
		lo, hi := c.primarySlots(i)
		if _, err := call(c.nodes[i], "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return err
		}
	}
	for _, s := range c.nodes[1:] {
		host, port := splitAddr(s.Addr)
		if _, err := call(c.nodes[0], "CLUSTER", "MEET", host, port); err != nil {
			return err
		}
	}
	// A replica must know its primary before it can replicate it.
	if err := poll(clusterFormTimeout, c.acquainted); err != nil {
		return fmt.Errorf("the nodes did not all get to know each other within %v: %w", clusterFormTimeout, err)
	}
	for i := c.primaries; i < len(c.nodes); i++ {
		if _, err := call(c.nodes[i], "CLUSTER", "REPLICATE", c.ids[c.primaryOf(i, replicasEach)]); err != nil {
			return err
		}
	}
	err := poll(clusterFormTimeout, func() error {
		reports, err := c.survey()
		if err != nil {
			return err
		}
		if err := c.healthy(reports); err != nil {
			return err
		}
		return c.shaped(reports, replicasEach)
	})
	if err != nil {
		return fmt.Errorf("the cluster was not healthy within %v: %w", clusterFormTimeout, err)
	}
	return nil
}

// primarySlots returns the first and the last slot of primary i's share.
func (c *Cluster) primarySlots(i int) (lo, hi int) {
	return i * clusterSlots / c.primaries, (i+1)*clusterSlots/c.primaries - 1
}

// primaryOf returns the index of the primary that node i, a replica,
// was made to replicate.
func (c *Cluster) primaryOf(i, replicasEach int) int {
	return (i - c.primaries) / replicasEach
}

// acquainted returns nil once every node lists every other, past the
// handshake.
func (c *Cluster) acquainted() error {
	for i, s := range c.nodes {
		v, err := c.view(s)
		if err != nil {
			return err
		}
		for j, id := range c.ids {
			if e := v.node(id); i != j && (e == nil || e.has("handshake") || e.has("noaddr")) {
				return fmt.Errorf("node %s does not know node %s yet", s.Addr, c.nodes[j].Addr)
			}
		}
	}
	return nil
}

// shaped returns nil if every report shows the cluster as StartCluster
// made it: each primary serving its share of the slots, each replica
// replicating its primary.
func (c *Cluster) shaped(reports []nodeReport, replicasEach int) error {
	for _, r := range reports {
		for i, id := range c.ids {
			e := r.view.node(id)
			if e == nil {
				return fmt.Errorf("node %s does not know node %s", r.srv.Addr, c.nodes[i].Addr)
			}
			if i < c.primaries {
				lo, hi := c.primarySlots(i)
				if !e.isPrimary() || len(e.slots) != 1 || e.slots[0] != [2]int{lo, hi} {
					return fmt.Errorf("node %s does not see node %s as the primary of slots %d-%d yet", r.srv.Addr, c.nodes[i].Addr, lo, hi)
				}
			} else if p := c.primaryOf(i, replicasEach); e.master != c.ids[p] {
				return fmt.Errorf("node %s does not see node %s as a replica of node %s yet", r.srv.Addr, c.nodes[i].Addr, c.nodes[p].Addr)
			}
		}
	}
	return nil
}

// Nodes returns every node: the primaries, in the order of their slots,
// then the replicas of the first primary, those of the second, and so on.
// Which node is a primary changes with failovers; the order does not.
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// Seeds returns the address, host:port, of every node, in the order of
// Nodes: where a cluster client may start.
func (c *Cluster) Seeds() []string {
	seeds := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		seeds[i] = s.Addr
	}
	return seeds
}

// Stop stops every node, as Server.Stop does, and removes every file the
// cluster made. Stopping a stopped cluster does nothing; concurrent calls
// return once the first has finished.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	// Replicas first: a primary that is shut down waits for its
	// connected replicas to catch up before it exits.
	// A failed StartCluster may have started fewer nodes than it meant
	// to.
	split := min(c.primaries, len(c.nodes))
	for _, nodes := range [][]*Server{c.nodes[split:], c.nodes[:split]} {
		var wg sync.WaitGroup
		for _, s := range nodes {
			wg.Go(s.Stop)
		}
		wg.Wait()
	}
	// As Server.Stop: a directory that cannot be removed is left behind.
	_ = os.RemoveAll(c.dir)
}

// index returns the position of s in Nodes, or -1.
func (c *Cluster) index(s *Server) int {
	for i, n := range c.nodes {
		if n == s {
			return i
		}
	}
	return -1
}

// byID returns the node with id, or nil.
func (c *Cluster) byID(id string) *Server {
	for i, n := range c.ids {
		if n == id {
			return c.nodes[i]
		}
	}
	return nil
}

// call sends one command to s and returns its reply, turning an error
// reply into an error, which names the node and the command.
func call(s *Server, args ...string) (resp.Value, error) {
	v, err := s.Do(args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return resp.Value{}, fmt.Errorf("node %s: %q: %w", s.Addr, args, err)
	}
	return v, nil
}

// poll calls cond every clusterPoll until it returns nil, or returns its
// last error once timeout has passed.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(clusterPoll)
	}
}

// splitAddr splits a host:port made by this package, which always parses.
func splitAddr(addr string) (host, port string) {
	host, port, _ = net.SplitHostPort(addr)
	return host, port
}

// errNotNode is returned for a Server that is not a node of the cluster.
var errNotNode = errors.New("not a node of this cluster")
