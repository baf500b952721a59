package integration_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/internal/redistest"
)

// sentinelsUnderTest is a Redis Sentinel deployment under test: a
// primary with two replicas, watched by three sentinels (quorum 2) that
// take a silent primary for down after 500ms, as redis-server processes
// on loopback or as containers on a Docker network of their own. Its
// methods that take a testing.TB fail the test when they cannot do their
// job; like t.Fatal they must be called on the test's goroutine.
type sentinelsUnderTest interface {
	// URL is what lock.Open takes: redis+sentinel://, every sentinel's
	// address, and the master's name.
	URL() string
	// Sentinels is every sentinel's host:port.
	Sentinels() []string
	// Nodes returns every data node, the first primary first; which is
	// the primary changes with failovers, the order does not.
	Nodes() []clusterNode
	// Live returns the data nodes that run: all but one killed and not
	// yet restarted.
	Live() []clusterNode
	// Primary returns the node that every sentinel names the primary and
	// that says it is one, once they agree (a sentinel that was frozen
	// may lag behind the others for a moment).
	Primary(t testing.TB) clusterNode
	// Failover has the sentinels promote a replica (SENTINEL FAILOVER),
	// and returns it once it is the settled primary: every sentinel names
	// it and every other node replicates from it, the old primary too,
	// which the sentinels turn into a replica only some ten seconds after
	// the promotion.
	Failover(t testing.TB) clusterNode
	// KillPrimary crashes the primary with SIGKILL and returns it once
	// it is gone; it stays down until RestartReplica.
	KillPrimary(t testing.TB) clusterNode
	// WaitFailover waits until the sentinels have promoted a node other
	// than old, and every live node replicates from it, and returns it.
	WaitFailover(t testing.TB, old clusterNode) clusterNode
	// RestartReplica starts a killed node again, without its data, as a
	// replica of the primary the sentinels name now (as the init scripts
	// of common deployments do), and returns once it has synced.
	RestartReplica(t testing.TB, n clusterNode)
	// PauseSentinel freezes the i-th sentinel for d, as a stalled host
	// would: the kernel still accepts connections and buffers commands.
	// It returns once the sentinel is frozen.
	PauseSentinel(t testing.TB, i int, d time.Duration)
}

// sentinelSettle bounds the wait for a Sentinel deployment to settle
// after a failover: a forced one leaves the old primary a primary until
// the sentinels next look at it, about ten seconds.
const sentinelSettle = 40 * time.Second

// processSentinels is a Sentinel deployment of processes started by
// redistest.
type processSentinels struct {
	s     *redistest.Sentinels
	nodes []clusterNode // a processServer per data node, in their order
}

func startProcessSentinels(t *testing.T) sentinelsUnderTest {
	t.Helper()
	s := redistest.StartSentinels(t, 2, 3)
	p := &processSentinels{s: s}
	for _, n := range s.Nodes {
		p.nodes = append(p.nodes, processServer{&redistest.Server{Server: n}})
	}
	return p
}

func (p *processSentinels) URL() string          { return p.s.URL() }
func (p *processSentinels) Nodes() []clusterNode { return append([]clusterNode(nil), p.nodes...) }

func (p *processSentinels) Sentinels() []string {
	var addrs []string
	for _, sn := range p.s.Sentinels.Sentinels {
		addrs = append(addrs, sn.Addr)
	}
	return addrs
}

func (p *processSentinels) Live() []clusterNode {
	var live []clusterNode
	for _, n := range p.nodes {
		if _, err := doAt(n.Addr(), "PING"); err == nil {
			live = append(live, n)
		}
	}
	return live
}

func (p *processSentinels) Primary(t testing.TB) clusterNode {
	t.Helper()
	return p.wrap(t, agreed(t, p.s.Sentinels.Primary))
}

func (p *processSentinels) Failover(t testing.TB) clusterNode {
	t.Helper()
	return p.wrap(t, p.s.Failover(t, sentinelSettle).Server)
}

func (p *processSentinels) KillPrimary(t testing.TB) clusterNode {
	t.Helper()
	p.Primary(t)
	return p.wrap(t, p.s.KillPrimary(t).Server)
}

func (p *processSentinels) WaitFailover(t testing.TB, old clusterNode) clusterNode {
	t.Helper()
	return p.wrap(t, p.s.WaitFailover(t, p.node(t, old).Server, sentinelSettle).Server)
}

func (p *processSentinels) RestartReplica(t testing.TB, n clusterNode) {
	t.Helper()
	p.s.RestartReplica(t, p.node(t, n).Server, sentinelSettle)
}

func (p *processSentinels) PauseSentinel(t testing.TB, i int, d time.Duration) {
	t.Helper()
	if err := p.s.Sentinels.Sentinels[i].Pause(d); err != nil {
		t.Fatal(err)
	}
}

// wrap returns the node that runs s.
func (p *processSentinels) wrap(t testing.TB, s *redisproc.Server) clusterNode {
	t.Helper()
	for _, n := range p.nodes {
		if n.(processServer).Server.Server == s {
			return n
		}
	}
	t.Fatalf("%s is none of the data nodes", s.Addr)
	return nil
}

func (p *processSentinels) node(t testing.TB, n clusterNode) processServer {
	t.Helper()
	s, ok := n.(processServer)
	if !ok {
		t.Fatalf("%s is not a data node of these sentinels", n.Addr())
	}
	return s
}

// agreed returns what get returns once it returns no error, which it
// asks every 50ms for up to sentinelSettle, and fails the test then.
func agreed[T any](t testing.TB, get func() (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(sentinelSettle)
	for {
		v, err := get()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// switchWatch notes when a sentinel first names a primary other than the
// one it was started on: the moment a client that asks it would move. It
// asks every sentinel every 10ms from a goroutine of its own, which stop
// ends and waits for.
type switchWatch struct {
	stopped chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	named   int64  // when, on the history's clock; 0 before; guarded by mu
	to      string // the primary then named; guarded by mu
}

func watchSwitch(sentinels []string, old string) *switchWatch {
	w := &switchWatch{stopped: make(chan struct{})}
	w.done.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, sn := range sentinels {
				v, err := doAt(sn, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", redisproc.SentinelMaster)
				if err != nil || len(v.Elems) != 2 {
					continue
				}
				if addr := net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str); addr != old {
					w.mu.Lock()
					w.named, w.to = now(), addr
					w.mu.Unlock()
					return
				}
			}
			select {
			case <-w.stopped:
				return
			case <-tick.C:
			}
		}
	})
	return w
}

// stop ends the watch and returns when a sentinel first named another
// primary, and which; 0 and "" if none did.
func (w *switchWatch) stop() (int64, string) {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.named, w.to
}
