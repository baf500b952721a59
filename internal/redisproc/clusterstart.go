package redisproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

const (
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
	dir   string    // holds every node's directory
	nodes []*Server // the primaries, then the replicas of each primary in turn
	// members are nodes, in their order, as the cluster checks see them,
	// which serve clusters this package did not start too: each live
	// while its node answers.
	members   []ClusterMember
	primaries int

	mu      sync.Mutex // serializes Stop
	stopped bool       // guarded by mu
}

// StartCluster starts primaries×(1+replicasEach) redis-server processes
// from PATH with cluster-enabled yes, each in a directory of its own under
// one temporary directory, on loopback ports that were free, all at most
// 55535 since each node's cluster bus listens 10000 above. It then forms
// them into one cluster, as FormCluster does: joins them (CLUSTER MEET),
// splits the 16384 slots evenly over the primaries, in order (CLUSTER
// ADDSLOTSRANGE: with 3 primaries, 0-5460, 5461-10921 and 10922-16383),
// and makes replicasEach replicas of each primary (CLUSTER REPLICATE). It
// returns once every node says
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
	var conf config
	for _, o := range opts {
		o(&conf)
	}
	bin, err := conf.binary()
	if err != nil {
		return nil, err
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
	if err := formMembers(c.members, primaries, replicasEach); err != nil {
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
		c.members = append(c.members, ClusterMember{Addr: s.Addr, Password: s.password, Live: s.answering})
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
