package integration_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/resp"
)

// sentinelPort is a sentinel container's port.
const sentinelPort = "26379"

// dockerSentinels is a Sentinel deployment of containers of one image on
// a bridge network made for it: three data nodes and three sentinels,
// each a redis-server (a sentinel runs it with --sentinel), reached by
// the test's host at its address on that network, where the nodes and
// the sentinels reach each other too, so that what the sentinels name is
// what a client dials. As the cluster of containers announces its nodes'
// addresses (cluster-announce-ip), each data node announces its own to
// its primary (replica-announce-ip) and each sentinel its own to the
// others (SENTINEL CONFIG SET announce-ip), once it runs and has one. It
// is judged, and failed over, by redisproc's rules for a deployment it
// did not start (redisproc.SentinelDeployment). Its methods must be
// called on the test's goroutine.
type dockerSentinels struct {
	pool      *dockertest.Pool
	network   *dockertest.Network
	nodes     []*dockerServer // the data nodes, the first primary first
	dirs      []string        // each data node's /conf, rewritten for a restart
	sentinels []*dockerServer
	killed    map[*dockerServer]bool // data nodes killed and not restarted
}

// startDockerSentinels starts three data nodes of image on a network of
// their own, makes the second and the third replicas of the first, starts
// three sentinels that watch it, and returns once the sentinels know
// every node and each other. The containers, then the network, are
// removed when the test ends; both carry the suite's labels.
func startDockerSentinels(t *testing.T, pool *dockertest.Pool, image string) sentinelsUnderTest {
	t.Helper()
	network := createNetwork(t, pool, "the sentinels")
	d := &dockerSentinels{pool: pool, network: network, killed: map[*dockerServer]bool{}}
	start := time.Now()
	d.nodes, d.dirs = make([]*dockerServer, 3), make([]string, 3)
	for i := range d.dirs {
		d.dirs[i] = t.TempDir()
	}
	d.startAll(t, d.nodes, func(i int) (*dockerServer, error) { return d.startNode(image, d.dirs[i]) })
	primary := d.nodes[0].addr
	host, port, _ := net.SplitHostPort(primary)
	for _, n := range d.nodes[1:] {
		if _, err := call(n.addr, "REPLICAOF", host, port); err != nil {
			t.Fatal(err)
		}
	}
	d.sentinels = make([]*dockerServer, 3)
	d.startAll(t, d.sentinels, func(int) (*dockerServer, error) { return d.startSentinel(image, t.TempDir(), primary) })
	started := time.Now()
	if err := d.deployment().WaitKnown(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("a primary, 2 replicas and 3 sentinels in containers on network %s: started in %v, known in %v", network.Network.Name,
		started.Sub(start).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	return d
}

// startAll starts len(into) containers with start, at once (each takes
// a second, most of it dockertest waiting in vain for an exposed port),
// and has each removed when the test ends.
func (d *dockerSentinels) startAll(t *testing.T, into []*dockerServer, start func(i int) (*dockerServer, error)) {
	t.Helper()
	errs := make([]error, len(into))
	var wg sync.WaitGroup
	for i := range into {
		wg.Go(func() { into[i], errs[i] = start(i) })
	}
	wg.Wait()
	for _, srv := range into {
		if srv != nil {
			t.Cleanup(srv.purge)
		}
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("container %d: %v", i, err)
		}
	}
}

// nodeConf is a data node's redis.conf: a primary's, or, with primary
// set, a replica's of it; ip, unless "", is the address it announces.
func nodeConf(ip, primary string) []string {
	conf := slices.Clone(redisproc.SentinelNodeConf)
	if ip != "" {
		conf = append(conf, "replica-announce-ip "+ip)
	}
	if primary != "" {
		host, port, _ := net.SplitHostPort(primary)
		conf = append(conf, "replicaof "+host+" "+port)
	}
	return containerConf(spec{config: conf})
}

// startNode starts a data node, a primary, and returns once it answers
// PING and announces its address on the network. It may run on any
// goroutine.
func (d *dockerSentinels) startNode(image, dir string) (*dockerServer, error) {
	if err := writeConf(dir, nodeConf("", "")); err != nil {
		return nil, err
	}
	srv, ip, err := d.run(image, dir, "6379", nil)
	if err != nil {
		return nil, err
	}
	if _, err := call(srv.addr, "CONFIG", "SET", "replica-announce-ip", ip); err != nil {
		srv.purge()
		return nil, err
	}
	return srv, nil
}

// startSentinel starts a sentinel that watches the primary at primary,
// and returns once it answers PING and announces its address on the
// network. Its /conf is mounted writable: a sentinel rewrites its
// configuration file with what it learns, and refuses to start on one it
// cannot write. It may run on any goroutine.
func (d *dockerSentinels) startSentinel(image, dir, primary string) (*dockerServer, error) {
	host, port, _ := net.SplitHostPort(primary)
	portN, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	conf := append([]string{"port " + sentinelPort, "bind 0.0.0.0", "protected-mode no", "daemonize no", "dir /tmp"},
		redisproc.SentinelConf(host, portN, 3)...)
	// The official image's entrypoint runs the server as its own user,
	// which must be able to replace the file.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sentinel.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o666); err != nil {
		return nil, err
	}
	srv, ip, err := d.run(image, dir, sentinelPort, func(o *dockertest.RunOptions) {
		o.Cmd = []string{"/conf/sentinel.conf", "--sentinel"}
		o.Mounts = []string{dir + ":/conf"}
	})
	if err != nil {
		return nil, err
	}
	if _, err := call(srv.addr, "SENTINEL", "CONFIG", "SET", "announce-ip", ip); err != nil {
		srv.purge()
		return nil, err
	}
	return srv, nil
}

// run runs a container of image on the network with dir's configuration
// (more changes the options: the command, the mounts), and returns it
// once it answers PING on its address on the network, port, with that
// address's host.
func (d *dockerSentinels) run(image, dir, port string, more func(*dockertest.RunOptions)) (*dockerServer, string, error) {
	res, err := runContainer(d.pool, image, dir, func(o *dockertest.RunOptions) {
		o.NetworkID = d.network.Network.ID
		if more != nil {
			more(o)
		}
	})
	if err != nil {
		return nil, "", fmt.Errorf("starting a container of %s: %w", image, err)
	}
	srv := &dockerServer{pool: d.pool, res: res}
	ip := res.GetIPInNetwork(d.network)
	if ip == "" {
		srv.purge()
		return nil, "", fmt.Errorf("container %s has no address on network %s", res.Container.Name, d.network.Network.Name)
	}
	srv.addr = net.JoinHostPort(ip, port)
	if err := srv.waitReady(); err != nil {
		srv.purge()
		return nil, "", fmt.Errorf("%s: %w", srv.addr, err)
	}
	return srv, ip, nil
}

// call sends one command to addr, from any goroutine, and returns its
// reply, an error reply turned into an error.
func call(addr string, args ...string) (v resp.Value, err error) {
	v, err = doAt(addr, args...)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return v, fmt.Errorf("%s: %q: %w", addr, args, err)
	}
	return v, nil
}

// deployment is d as redisproc's checks see it: a data node is live
// until killed, and again once restarted.
func (d *dockerSentinels) deployment() redisproc.SentinelDeployment {
	var dep redisproc.SentinelDeployment
	for _, n := range d.nodes {
		dep.Nodes = append(dep.Nodes, redisproc.SentinelMember{Addr: n.addr, Live: func() bool { return !d.killed[n] }})
	}
	for _, sn := range d.sentinels {
		dep.Sentinels = append(dep.Sentinels, redisproc.SentinelMember{Addr: sn.addr})
	}
	return dep
}

func (d *dockerSentinels) URL() string { return d.deployment().URL() }

func (d *dockerSentinels) Sentinels() []string {
	var addrs []string
	for _, sn := range d.sentinels {
		addrs = append(addrs, sn.addr)
	}
	return addrs
}

func (d *dockerSentinels) Nodes() []clusterNode {
	nodes := make([]clusterNode, len(d.nodes))
	for i, n := range d.nodes {
		nodes[i] = n
	}
	return nodes
}

func (d *dockerSentinels) Live() []clusterNode {
	var live []clusterNode
	for _, n := range d.nodes {
		if !d.killed[n] {
			live = append(live, n)
		}
	}
	return live
}

func (d *dockerSentinels) Primary(t testing.TB) clusterNode {
	t.Helper()
	return d.nodes[agreed(t, d.deployment().Primary)]
}

func (d *dockerSentinels) Failover(t testing.TB) clusterNode {
	t.Helper()
	i, err := d.deployment().Failover(sentinelSettle)
	if err != nil {
		t.Fatal(err)
	}
	return d.nodes[i]
}

func (d *dockerSentinels) KillPrimary(t testing.TB) clusterNode {
	t.Helper()
	p := d.Primary(t).(*dockerServer)
	killContainer(t, d.pool, p)
	d.killed[p] = true
	return p
}

func (d *dockerSentinels) WaitFailover(t testing.TB, old clusterNode) clusterNode {
	t.Helper()
	i, err := d.deployment().WaitPrimary(d.index(t, old), sentinelSettle)
	if err != nil {
		t.Fatal(err)
	}
	return d.nodes[i]
}

func (d *dockerSentinels) RestartReplica(t testing.TB, n clusterNode) {
	t.Helper()
	i := d.index(t, n)
	s := d.nodes[i]
	dep := d.deployment()
	p := agreed(t, dep.Primary)
	host, _, _ := net.SplitHostPort(s.addr)
	// The container keeps its address (nobody else starts on the
	// network) and reads its configuration again: a replica's now.
	if err := writeConf(d.dirs[i], nodeConf(host, d.nodes[p].addr)); err != nil {
		t.Fatal(err)
	}
	restartContainer(t, d.pool, d.network, s)
	if err := s.waitReady(); err != nil {
		t.Fatal(err)
	}
	delete(d.killed, s)
	if _, err := dep.WaitSettled(sentinelSettle); err != nil {
		t.Fatal(err)
	}
}

func (d *dockerSentinels) PauseSentinel(t testing.TB, i int, dur time.Duration) {
	t.Helper()
	d.sentinels[i].Pause(t, dur)
}

// index returns n's index among the data nodes.
func (d *dockerSentinels) index(t testing.TB, n clusterNode) int {
	t.Helper()
	s, ok := n.(*dockerServer)
	i := slices.Index(d.nodes, s)
	if !ok || i < 0 {
		t.Fatalf("%s is not a data node of these sentinels", n.Addr())
	}
	return i
}
