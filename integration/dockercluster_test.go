package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/batonlock/baton/internal/redisproc"
)

// killTimeout bounds the wait for a killed container to be gone.
const killTimeout = 10 * time.Second

// clusterNodeConf are the redis.conf lines of a node of a cluster of
// containers: those redisproc gives the nodes of its StartCluster, and
// for the same reasons. The node's own address (cluster-announce-ip) is
// set once the container runs and has one.
var clusterNodeConf = []string{
	"cluster-enabled yes",
	fmt.Sprintf("cluster-node-timeout %d", redisproc.MemberNodeTimeout.Milliseconds()),
	// A replica's full sync starts at once and goes through memory.
	"repl-diskless-sync yes",
	"repl-diskless-sync-delay 0",
	"repl-diskless-load swapdb",
	// Clients see a replica as soon as its offset has moved.
	"repl-ping-replica-period 1",
	// The cluster keeps the shape it was given.
	"cluster-allow-replica-migration no",
}

// dockerCluster is a Redis Cluster of containers of one image on a
// bridge network made for it, each node reached by the test's host at
// its address on that network, port 6379; no port of the host is bound.
// It is formed, and judged healthy, by redisproc's rules for a cluster it
// did not start. Its methods must be called on the test's goroutine.
type dockerCluster struct {
	pool    *dockertest.Pool
	network *dockertest.Network
	nodes   []*dockerServer // the primaries, then the replicas of each in turn
	// members are nodes, in their order, as redisproc's cluster checks
	// see them: each live until killed, and again once restarted.
	members []redisproc.ClusterMember
	killed  map[*dockerServer]bool // nodes killed and not restarted
}

// startDockerCluster starts primaries×(1+replicasEach) containers of
// image on a network of their own, forms them into a cluster as redisproc
// forms its own (redisproc.FormCluster: CLUSTER ADDSLOTSRANGE, MEET, then
// REPLICATE), and returns once the cluster is healthy and shaped as asked. The containers, then
// the network, are removed when the test ends; both carry the suite's
// labels, so that a run that died without removing them has them removed
// by the next (purgeOrphans).
func startDockerCluster(t *testing.T, pool *dockertest.Pool, image string, primaries, replicasEach int) clusterUnderTest {
	t.Helper()
	network := createNetwork(t, pool, "the cluster")
	c := &dockerCluster{pool: pool, network: network, killed: map[*dockerServer]bool{}}
	start := time.Now()
	// At once: each takes a second, most of it dockertest waiting in
	// vain for the exposed port to be published.
	c.nodes = make([]*dockerServer, primaries*(1+replicasEach))
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i := range c.nodes {
		dir := t.TempDir()
		wg.Go(func() { c.nodes[i], errs[i] = c.startNode(image, dir) })
	}
	wg.Wait()
	for _, srv := range c.nodes {
		if srv != nil {
			t.Cleanup(srv.purge)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	for _, s := range c.nodes {
		c.members = append(c.members, redisproc.ClusterMember{Addr: s.addr, Live: func() bool { return !c.killed[s] }})
	}
	started := time.Now()
	if err := redisproc.FormCluster(c.members, primaries, replicasEach); err != nil {
		t.Fatal(err)
	}
	t.Logf("a cluster of %d containers on network %s: started in %v, formed in %v", len(c.nodes), network.Network.Name,
		started.Sub(start).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	return c
}

// startNode starts one node, and returns once it answers PING and
// announces its address on the network. It may run on any goroutine.
func (c *dockerCluster) startNode(image, dir string) (*dockerServer, error) {
	if err := writeConf(dir, containerConf(spec{config: clusterNodeConf})); err != nil {
		return nil, err
	}
	res, err := runContainer(c.pool, image, dir, func(o *dockertest.RunOptions) { o.NetworkID = c.network.Network.ID })
	if err != nil {
		return nil, fmt.Errorf("starting a container of %s: %w", image, err)
	}
	srv := &dockerServer{pool: c.pool, res: res}
	ip := res.GetIPInNetwork(c.network)
	if ip == "" {
		srv.purge()
		return nil, fmt.Errorf("container %s has no address on network %s", res.Container.Name, c.network.Network.Name)
	}
	srv.addr = net.JoinHostPort(ip, "6379")
	if err := c.announce(srv); err != nil {
		srv.purge()
		return nil, err
	}
	return srv, nil
}

// announce waits until srv answers PING, and has it announce its address
// on the network to its peers.
func (c *dockerCluster) announce(srv *dockerServer) error {
	if err := srv.waitReady(); err != nil {
		return fmt.Errorf("node %s: %w", srv.addr, err)
	}
	host, _, _ := net.SplitHostPort(srv.addr)
	v, err := doAt(srv.addr, "CONFIG", "SET", "cluster-announce-ip", host)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return fmt.Errorf("node %s: CONFIG SET cluster-announce-ip: %w", srv.addr, err)
	}
	return nil
}

func (c *dockerCluster) URL() string {
	addrs := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		addrs[i] = s.addr
	}
	return clusterURL(addrs)
}

func (c *dockerCluster) Nodes() []clusterNode {
	nodes := make([]clusterNode, len(c.nodes))
	for i, s := range c.nodes {
		nodes[i] = s
	}
	return nodes
}

func (c *dockerCluster) Primary(t testing.TB, slot int) clusterNode {
	t.Helper()
	i, err := redisproc.ClusterPrimary(c.members, slot)
	if err != nil {
		t.Fatal(err)
	}
	s := c.nodes[i]
	if c.killed[s] {
		t.Fatalf("slot %d is served by %s, which is down", slot, s.addr)
	}
	return s
}

func (c *dockerCluster) Kill(t testing.TB, n clusterNode) {
	t.Helper()
	s := c.node(t, n)
	killContainer(t, c.pool, s)
	c.killed[s] = true
}

func (c *dockerCluster) Restart(t testing.TB, n clusterNode) {
	t.Helper()
	s := c.node(t, n)
	// The container keeps its files, nodes.conf among them, but the
	// server persists no data.
	restartContainer(t, c.pool, c.network, s)
	if err := c.announce(s); err != nil {
		t.Fatal(err)
	}
	delete(c.killed, s)
}

// MigrateSlot has the source's MIGRATE send the keys to the target's
// Addr: its address on the network, where the containers reach each
// other too.
func (c *dockerCluster) MigrateSlot(t testing.TB, slot int, to clusterNode, open time.Duration) {
	t.Helper()
	i := slices.Index(c.nodes, c.node(t, to))
	if err := redisproc.MigrateClusterSlot(c.members, slot, i, open); err != nil {
		t.Fatal(err)
	}
}

func (c *dockerCluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := redisproc.WaitClusterHealthy(c.members, timeout); err != nil {
		t.Fatal(err)
	}
}

// node returns n as one of c's nodes.
func (c *dockerCluster) node(t testing.TB, n clusterNode) *dockerServer {
	t.Helper()
	s, ok := n.(*dockerServer)
	if !ok || !slices.Contains(c.nodes, s) {
		t.Fatalf("%s is not a node of this cluster", n.Addr())
	}
	return s
}

// createNetwork creates a bridge network of its own, with the suite's
// labels, for what (a cluster, sentinels): removed when the test ends,
// after its containers, since it is registered first.
func createNetwork(t *testing.T, pool *dockertest.Pool, what string) *dockertest.Network {
	t.Helper()
	name := make([]byte, 4)
	_, _ = rand.Read(name)
	network, err := pool.CreateNetwork("baton-integration-"+hex.EncodeToString(name), func(o *docker.CreateNetworkOptions) {
		o.Driver = "bridge"
		o.Labels = suiteLabels()
	})
	if err != nil {
		t.Fatalf("creating a network for %s: %v", what, err)
	}
	t.Cleanup(func() { removeNetwork(pool, network.Network.ID) })
	return network
}

// killContainer kills s's container (docker kill: SIGKILL, as a crash)
// and waits until it is gone.
func killContainer(t testing.TB, pool *dockertest.Pool, s *dockerServer) {
	t.Helper()
	id := s.res.Container.ID
	if err := pool.Client.KillContainer(docker.KillContainerOptions{ID: id}); err != nil {
		t.Fatalf("killing %s: %v", s.addr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	if _, err := pool.Client.WaitContainerWithContext(id, ctx); err != nil {
		t.Fatalf("killing %s: waiting for it to be gone: %v", s.addr, err)
	}
}

// restartContainer starts s's killed container again and checks that it
// came back on its address on network: nobody else starts there, so the
// engine gives it back, and the others know the node by it.
func restartContainer(t testing.TB, pool *dockertest.Pool, network *dockertest.Network, s *dockerServer) {
	t.Helper()
	id := s.res.Container.ID
	if err := pool.Client.StartContainer(id, nil); err != nil {
		t.Fatalf("starting %s again: %v", s.addr, err)
	}
	ct, err := pool.Client.InspectContainer(id)
	if err != nil {
		t.Fatalf("starting %s again: %v", s.addr, err)
	}
	host, _, _ := net.SplitHostPort(s.addr)
	if ip := ct.NetworkSettings.Networks[network.Network.Name].IPAddress; ip != host {
		t.Fatalf("node %s came back on another address: %q", s.addr, ip)
	}
}
