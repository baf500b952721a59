package integration_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/batonlock/baton/internal/redisproc"
)

const (
	// clusterSlots is how many hash slots a Redis Cluster has.
	clusterSlots = 16384
	// clusterPoll is the pause between two looks at a forming or
	// settling cluster.
	clusterPoll = 20 * time.Millisecond
	// clusterForm bounds each wait while a cluster is formed: for every
	// node to know every other, and for the cluster to be healthy, which
	// includes the 2s a new primary keeps its cluster down.
	clusterForm = 30 * time.Second
	// killTimeout bounds the wait for a killed container to be gone.
	killTimeout = 10 * time.Second
)

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
// Its methods must be called on the test's goroutine.
type dockerCluster struct {
	pool      *dockertest.Pool
	network   *dockertest.Network
	nodes     []*dockerServer // the primaries, then the replicas of each in turn
	ids       []string        // the nodes' IDs, in the order of nodes
	primaries int
	killed    map[*dockerServer]bool // nodes killed and not restarted
}

// startDockerCluster starts primaries×(1+replicasEach) containers of
// image on a network of their own, forms them into a cluster as redisproc
// forms its own (CLUSTER ADDSLOTSRANGE, MEET, then REPLICATE), and returns
// once the cluster is healthy and shaped as asked. The containers, then
// the network, are removed when the test ends; both carry the suite's
// labels, so that a run that died without removing them has them removed
// by the next (purgeOrphans).
func startDockerCluster(t *testing.T, pool *dockertest.Pool, image string, primaries, replicasEach int) clusterUnderTest {
	t.Helper()
	name := make([]byte, 4)
	_, _ = rand.Read(name)
	network, err := pool.CreateNetwork("baton-integration-"+hex.EncodeToString(name), func(o *docker.CreateNetworkOptions) {
		o.Driver = "bridge"
		o.Labels = suiteLabels()
	})
	if err != nil {
		t.Fatalf("creating a network for the cluster: %v", err)
	}
	// Registered first, so that it runs after the containers are gone.
	t.Cleanup(func() { removeNetwork(pool, network.Network.ID) })
	c := &dockerCluster{pool: pool, network: network, primaries: primaries, killed: map[*dockerServer]bool{}}
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
	started := time.Now()
	if err := c.form(replicasEach); err != nil {
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
	_, err := call(srv.addr, "CONFIG", "SET", "cluster-announce-ip", host)
	return err
}

// form makes a cluster of the nodes, and waits until it is in shape.
func (c *dockerCluster) form(replicasEach int) error {
	for i, s := range c.nodes {
		id, err := call(s.addr, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		c.ids = append(c.ids, id)
		// Distinct config epochs from the start spare the primaries the
		// rounds of bumping that resolve a collision.
		if _, err := call(s.addr, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i := range c.primaries {
		lo, hi := c.primarySlots(i)
		if _, err := call(c.nodes[i].addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return err
		}
	}
	for _, s := range c.nodes[1:] {
		host, port, _ := net.SplitHostPort(s.addr)
		if _, err := call(c.nodes[0].addr, "CLUSTER", "MEET", host, port); err != nil {
			return err
		}
	}
	// A replica must know its primary before it can replicate it.
	if err := poll(clusterForm, c.acquainted); err != nil {
		return fmt.Errorf("the nodes did not all get to know each other within %v: %w", clusterForm, err)
	}
	for i := c.primaries; i < len(c.nodes); i++ {
		if _, err := call(c.nodes[i].addr, "CLUSTER", "REPLICATE", c.ids[(i-c.primaries)/replicasEach]); err != nil {
			return err
		}
	}
	err := poll(clusterForm, func() error {
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
		return fmt.Errorf("the cluster was not healthy within %v: %w", clusterForm, err)
	}
	return nil
}

// primarySlots returns the first and the last slot of primary i's share.
func (c *dockerCluster) primarySlots(i int) (lo, hi int) {
	return i * clusterSlots / c.primaries, (i+1)*clusterSlots/c.primaries - 1
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
	// The claim with the highest config epoch wins, as in the cluster
	// itself: right as soon as the new owner has taken the slot.
	var best *nodesLine
	for i, s := range c.nodes {
		if c.killed[s] {
			continue
		}
		v, err := c.view(i)
		if err != nil {
			t.Fatal(err)
		}
		if l := v.owner(slot); l != nil && (best == nil || l.epoch > best.epoch) {
			best = l
		}
	}
	if best == nil {
		t.Fatalf("no live node says who serves slot %d", slot)
	}
	s := c.byID(best.id)
	switch {
	case s == nil:
		t.Fatalf("slot %d is served by node %s, which is not one of the cluster's", slot, best.id)
	case c.killed[s]:
		t.Fatalf("slot %d is served by %s, which is down", slot, s.addr)
	}
	return s
}

func (c *dockerCluster) Kill(t testing.TB, n clusterNode) {
	t.Helper()
	s := c.node(t, n)
	id := s.res.Container.ID
	// docker kill: SIGKILL, as a crash.
	if err := c.pool.Client.KillContainer(docker.KillContainerOptions{ID: id}); err != nil {
		t.Fatalf("killing %s: %v", s.addr, err)
	}
	err := poll(killTimeout, func() error {
		ct, err := c.pool.Client.InspectContainer(id)
		if err == nil && ct.State.Running {
			err = errors.New("still running")
		}
		return err
	})
	if err != nil {
		t.Fatalf("killing %s: %v", s.addr, err)
	}
	c.killed[s] = true
}

func (c *dockerCluster) Restart(t testing.TB, n clusterNode) {
	t.Helper()
	s := c.node(t, n)
	id := s.res.Container.ID
	// The container keeps its files, nodes.conf among them, but the
	// server persists no data.
	if err := c.pool.Client.StartContainer(id, nil); err != nil {
		t.Fatalf("starting %s again: %v", s.addr, err)
	}
	ct, err := c.pool.Client.InspectContainer(id)
	if err != nil {
		t.Fatalf("starting %s again: %v", s.addr, err)
	}
	// Nobody else starts on the network, so the engine gives the node
	// its address back; the cluster and its clients know it by that.
	host, _, _ := net.SplitHostPort(s.addr)
	if ip := ct.NetworkSettings.Networks[c.network.Network.Name].IPAddress; ip != host {
		t.Fatalf("node %s came back on another address: %q", s.addr, ip)
	}
	if err := c.announce(s); err != nil {
		t.Fatal(err)
	}
	delete(c.killed, s)
}

func (c *dockerCluster) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	err := poll(timeout, func() error {
		reports, err := c.survey()
		if err != nil {
			return err
		}
		return c.healthy(reports)
	})
	if err != nil {
		t.Fatalf("the cluster is not healthy after %v: %v", timeout, err)
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

// byID returns the node with id, or nil.
func (c *dockerCluster) byID(id string) *dockerServer {
	if i := slices.Index(c.ids, id); i >= 0 {
		return c.nodes[i]
	}
	return nil
}

// describe names the node with id by its address, if it is one of c's.
func (c *dockerCluster) describe(id string) string {
	if s := c.byID(id); s != nil {
		return s.addr
	}
	return "node " + id
}

// acquainted returns nil once every node lists every other, past the
// handshake.
func (c *dockerCluster) acquainted() error {
	for i, s := range c.nodes {
		v, err := c.view(i)
		if err != nil {
			return err
		}
		for j, id := range c.ids {
			if l := v.nodes[id]; i != j && (l == nil || l.has("handshake") || l.has("noaddr")) {
				return fmt.Errorf("node %s does not know node %s yet", s.addr, c.nodes[j].addr)
			}
		}
	}
	return nil
}

// nodeReport is what one live node says about the cluster.
type nodeReport struct {
	srv   *dockerServer
	id    string
	state string    // cluster_state of CLUSTER INFO
	view  nodesView // CLUSTER NODES
	link  string    // master_link_status of INFO replication; "" on a primary
}

// survey asks every live node for its report.
func (c *dockerCluster) survey() ([]nodeReport, error) {
	var reports []nodeReport
	for i, s := range c.nodes {
		if c.killed[s] {
			continue
		}
		info, err := call(s.addr, "CLUSTER", "INFO")
		if err != nil {
			return nil, err
		}
		v, err := c.view(i)
		if err != nil {
			return nil, err
		}
		repl, err := call(s.addr, "INFO", "replication")
		if err != nil {
			return nil, err
		}
		reports = append(reports, nodeReport{
			srv: s, id: c.ids[i], view: v,
			state: infoField(info, "cluster_state"), link: infoField(repl, "master_link_status"),
		})
	}
	if len(reports) == 0 {
		return nil, errors.New("no node is running")
	}
	return reports, nil
}

// healthy returns nil if the reports, one from every live node, show the
// cluster settled, or else the first thing amiss.
func (c *dockerCluster) healthy(reports []nodeReport) error {
	live := map[string]bool{}
	for _, r := range reports {
		live[r.id] = true
	}
	var shape0 string
	for _, r := range reports {
		v := r.view
		switch {
		case v.self != r.id:
			return fmt.Errorf("node %s answers as node %s, not %s", r.srv.addr, v.self, r.id)
		case r.state != "ok":
			return fmt.Errorf("node %s says cluster_state:%s", r.srv.addr, r.state)
		}
		for _, o := range reports {
			l := v.nodes[o.id]
			switch {
			case o.id == r.id:
			case l == nil:
				return fmt.Errorf("node %s does not know node %s", r.srv.addr, o.srv.addr)
			case l.down():
				return fmt.Errorf("node %s holds node %s to be %s", r.srv.addr, o.srv.addr, l.flags)
			case !l.connected:
				return fmt.Errorf("node %s has no link to node %s", r.srv.addr, o.srv.addr)
			}
		}
		served := 0
		var shape []string
		for id, l := range v.nodes {
			if !live[id] {
				continue
			}
			if !l.isPrimary() {
				shape = append(shape, fmt.Sprintf("%s replicates %s", c.describe(id), c.describe(l.master)))
				continue
			}
			for _, sr := range l.slots {
				served += sr[1] - sr[0] + 1
				shape = append(shape, fmt.Sprintf("%d-%d: %s", sr[0], sr[1], c.describe(id)))
			}
		}
		if served != clusterSlots {
			return fmt.Errorf("node %s sees %d of the %d slots served by live primaries", r.srv.addr, served, clusterSlots)
		}
		if self := v.nodes[v.self]; !self.isPrimary() && r.link != "up" {
			return fmt.Errorf("replica %s has its link to its primary %s %s", r.srv.addr, c.describe(self.master), r.link)
		}
		sort.Strings(shape)
		if s := strings.Join(shape, "; "); shape0 == "" {
			shape0 = s
		} else if s != shape0 {
			return fmt.Errorf("node %s and node %s disagree on the cluster's shape:\n%s\n%s", reports[0].srv.addr, r.srv.addr, shape0, s)
		}
	}
	return nil
}

// shaped returns nil if every report shows the cluster as form made it:
// each primary serving its share of the slots, each replica replicating
// its primary.
func (c *dockerCluster) shaped(reports []nodeReport, replicasEach int) error {
	for _, r := range reports {
		for i, id := range c.ids {
			l := r.view.nodes[id]
			if l == nil {
				return fmt.Errorf("node %s does not know node %s", r.srv.addr, c.nodes[i].addr)
			}
			if i < c.primaries {
				lo, hi := c.primarySlots(i)
				if !l.isPrimary() || len(l.slots) != 1 || l.slots[0] != [2]int{lo, hi} {
					return fmt.Errorf("node %s does not see node %s as the primary of slots %d-%d yet", r.srv.addr, c.nodes[i].addr, lo, hi)
				}
			} else if p := (i - c.primaries) / replicasEach; l.master != c.ids[p] {
				return fmt.Errorf("node %s does not see node %s as a replica of node %s yet", r.srv.addr, c.nodes[i].addr, c.nodes[p].addr)
			}
		}
	}
	return nil
}

// view returns the CLUSTER NODES of node i.
func (c *dockerCluster) view(i int) (nodesView, error) {
	text, err := call(c.nodes[i].addr, "CLUSTER", "NODES")
	if err != nil {
		return nodesView{}, err
	}
	v, err := parseNodes(text)
	if err != nil {
		return nodesView{}, fmt.Errorf("node %s: %w", c.nodes[i].addr, err)
	}
	return v, nil
}

// nodesView is one node's account of the cluster: its CLUSTER NODES.
type nodesView struct {
	self  string                // the answering node's ID
	nodes map[string]*nodesLine // by ID
}

// nodesLine is one line of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
type nodesLine struct {
	id        string
	flags     string   // myself, master, slave, fail?, fail, handshake, noaddr, ..., comma-separated
	master    string   // the ID of a replica's primary; "" for a primary
	epoch     uint64   // its config epoch
	connected bool     // the answering node's link to it is up
	slots     [][2]int // the inclusive ranges it serves; slots being migrated are left out
}

func (l *nodesLine) has(flag string) bool { return slices.Contains(strings.Split(l.flags, ","), flag) }
func (l *nodesLine) isPrimary() bool      { return l.has("master") }

// down reports whether the answering node holds the line's node to be
// failing, suspects it, or has yet to get to know it.
func (l *nodesLine) down() bool {
	return l.has("fail") || l.has("fail?") || l.has("handshake") || l.has("noaddr")
}

// owner returns the primary that serves slot in this view, or nil.
func (v nodesView) owner(slot int) *nodesLine {
	for _, l := range v.nodes {
		for _, r := range l.slots {
			if l.isPrimary() && r[0] <= slot && slot <= r[1] {
				return l
			}
		}
	}
	return nil
}

// parseNodes parses the text of CLUSTER NODES.
func parseNodes(text string) (nodesView, error) {
	v := nodesView{nodes: map[string]*nodesLine{}}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nodesView{}, fmt.Errorf("CLUSTER NODES line %q has %d fields, not at least 8", line, len(f))
		}
		l := &nodesLine{id: f[0], flags: f[2], connected: f[7] == "connected"}
		if f[3] != "-" {
			l.master = f[3]
		}
		var err error
		if l.epoch, err = strconv.ParseUint(f[6], 10, 64); err != nil {
			return nodesView{}, fmt.Errorf("CLUSTER NODES line %q: config epoch: %w", line, err)
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // [slot->-id] migrating, [slot-<-id] importing
			}
			first, last, isRange := strings.Cut(s, "-")
			if !isRange {
				last = first
			}
			lo, err1 := strconv.Atoi(first)
			hi, err2 := strconv.Atoi(last)
			if err1 != nil || err2 != nil || lo < 0 || lo > hi || hi >= clusterSlots {
				return nodesView{}, fmt.Errorf("CLUSTER NODES line %q: bad slot range %q", line, s)
			}
			l.slots = append(l.slots, [2]int{lo, hi})
		}
		if l.has("myself") {
			v.self = l.id
		}
		v.nodes[l.id] = l
	}
	if v.self == "" {
		return nodesView{}, fmt.Errorf("CLUSTER NODES has no line flagged myself:\n%s", text)
	}
	return v, nil
}

// call sends one command to the node at addr and returns its reply's
// text, turning an error reply into an error; both name the node and the
// command.
func call(addr string, args ...string) (string, error) {
	v, err := doAt(addr, args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return "", fmt.Errorf("node %s: %q: %w", addr, args, err)
	}
	return v.Str, nil
}

// infoField returns the value of field in the text of INFO or CLUSTER
// INFO, or "".
func infoField(text, field string) string {
	for line := range strings.Lines(text) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v
		}
	}
	return ""
}

// poll calls cond every clusterPoll until it returns nil, or returns its
// last error once timeout has passed.
func poll(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(clusterPoll)
	}
}

// removeNetwork removes a network of the suite, once its containers are
// gone; one that is gone already is not an error.
func removeNetwork(pool *dockertest.Pool, id string) {
	err := pool.Client.RemoveNetwork(id)
	var gone *docker.NoSuchNetwork
	if err != nil && !errors.As(err, &gone) {
		fmt.Fprintf(os.Stderr, "integration: removing network %.12s: %v\n", id, err)
	}
}

// purgeNetworks removes the networks with label (a key, or key=value)
// that remove picks: to run once the containers on them are removed.
func purgeNetworks(pool *dockertest.Pool, label string, remove func(docker.Network) bool) {
	networks, err := pool.Client.FilteredListNetworks(docker.NetworkFilterOpts{"label": {label: true}})
	if err != nil {
		return // the containers are what matters most
	}
	for _, n := range networks {
		if remove(n) {
			removeNetwork(pool, n.ID)
		}
	}
}

// purgeOrphanNetworks removes the networks of earlier runs whose process
// is gone without removing them.
func purgeOrphanNetworks(pool *dockertest.Pool) {
	purgeNetworks(pool, containerLabel, func(n docker.Network) bool {
		pid, err := strconv.Atoi(n.Labels[pidLabel])
		if err != nil || redisproc.Alive(pid) {
			return false
		}
		fmt.Printf("integration: removing network %s, left by an earlier run (process %d) that is gone\n", n.Name, pid)
		return true
	})
}

// purgeRunNetworks removes every network of this run that is still there.
func purgeRunNetworks(pool *dockertest.Pool) {
	purgeNetworks(pool, containerLabel+"="+suite.runLabel, func(docker.Network) bool { return true })
}
