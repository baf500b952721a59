package integration_test

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/resp"
)

// chaosTarget is what a chaos round runs on: one server, a Redis
// Cluster, whose faults include a slow reshard and a failover, or a
// Sentinel deployment, whose faults include a failover.
type chaosTarget struct {
	addr string // what lock.Open takes
	// at returns the address of the node that serves key's lock now.
	at func(key string) string
	// nodes returns the address of every live data node, which the
	// faults of one server strike.
	nodes func() []string
	// pass is the data nodes' password, "" for none: the admin
	// connections of the checks and faults (do) send it.
	pass string
	// secrets are the passwords that no text of a round may say (see
	// checkSecrets): pass, and the sentinels' own.
	secrets []string
	// admin is where a Modify's fn that puts the server out of memory
	// sends CONFIG SET: the server, where there is one; "" where the
	// actors cannot tell which node holds a key.
	admin string
	// proxies are the fault proxies in front of data nodes, by the
	// node's address, which clients reach through the proxy alone: the
	// faults of the network (refused connections, a frozen handshake)
	// strike a node through its proxy where it has one, and with
	// admin commands where it has none (see faulter.outage).
	proxies map[string]*faultproxy.Proxy
	// maxOutage, if not 0, caps the span of those faults: a node that
	// answers nobody for longer makes the deployment act on its own (a
	// sentinel's failover).
	maxOutage time.Duration
	cluster   clusterUnderTest // nil but on a cluster
	// acks is the n of the Lockers' WithReplicaAck, 0 for none.
	acks int
	// releaseTimeout is the Lockers' WithReleaseTimeout, 0 for lock's
	// default.
	releaseTimeout time.Duration
	// describe, if not nil, says what a failed round's log should show
	// of the target's own state.
	describe func() string
	// faults are the target's own faults, by weight, added to those of
	// one server; strike injects one of them, on the faulter's goroutine,
	// and describes it for the history.
	faults []weighted[string]
	strike map[string]func(f *faulter) string
	// watch, if not nil, runs on a goroutine of its own through a round,
	// until stop closes, and notes in the history what the target does
	// on its own, which no fault injected.
	watch func(stop <-chan struct{}, note func(string))
}

// startWatch runs target.watch, if any, noting into rec, and returns
// the function that stops it and waits for it; that may be called
// more than once.
func (target chaosTarget) startWatch(rec *chaosRecorder) func() {
	if target.watch == nil {
		return func() {}
	}
	stop := make(chan struct{})
	var watching sync.WaitGroup
	watching.Go(func() {
		target.watch(stop, func(note string) {
			rec.add(chaosRecord{Kind: recFault, ID: rec.newID("fault"), Call: now(), Ret: now(), Note: note})
		})
	})
	return sync.OnceFunc(func() {
		close(stop)
		watching.Wait()
	})
}

// do sends one command to the data node at addr, as redisproc.Do, with
// the target's password.
func (target chaosTarget) do(addr string, args ...string) (resp.Value, error) {
	return redisproc.Do(addr, target.pass, args...)
}

// chaosPassword is a new password for a chaos target's servers: a random
// core, which no text can hold by chance, between characters that a URL
// percent-encodes ('/', '%', '@', ':') or that a query encodes ('+'), so
// that the forms it may leak in differ from one another.
func chaosPassword() string {
	core := make([]byte, 6)
	_, _ = crand.Read(core)
	return "chaos/" + hex.EncodeToString(core) + "+%@:"
}

// serverTarget is a chaos target on srv, which it makes require a new
// password (chaosPassword), and which the Lockers reach through a fault
// proxy, closed when the test ends, with the password in their URL: the
// checks and faults reach srv itself.
func serverTarget(t *testing.T, srv server) chaosTarget {
	t.Helper()
	addr := srv.Addr()
	pass := chaosPassword()
	// Set once the server runs, on either backend, rather than in its
	// config, which a container's readiness check would have to know.
	if v, err := redisproc.Do(addr, "", "CONFIG", "SET", "requirepass", pass); err != nil || v.Err() != nil {
		// The error quotes the command, password and all.
		t.Fatalf("CONFIG SET requirepass: %s", newSecretForms(pass).redact(fmt.Sprint(err, v.Err())))
	}
	proxy, err := faultproxy.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	return chaosTarget{
		addr:    "redis://" + url.UserPassword("", pass).String() + "@" + proxy.Addr(),
		at:      func(string) string { return addr },
		nodes:   func() []string { return []string{addr} },
		pass:    pass,
		secrets: []string{pass},
		admin:   addr,
		proxies: map[string]*faultproxy.Proxy{addr: proxy},
	}
}

// clusterTarget is a chaos target on c, whose nodes require pass, ""
// for none; its methods that take t must run on the test's goroutine:
// the faulter's does.
func clusterTarget(t *testing.T, c clusterUnderTest, pass string) chaosTarget {
	addr := c.URL()
	if pass != "" {
		addr = strings.Replace(addr, "://", "://"+url.UserPassword("", pass).String()+"@", 1)
	}
	return chaosTarget{
		addr: addr,
		at:   func(key string) string { return c.Primary(t, tokenSlot(key)).Addr() },
		nodes: func() []string {
			var addrs []string
			for _, n := range c.Nodes() {
				if _, err := redisproc.Do(n.Addr(), pass, "PING"); err == nil {
					addrs = append(addrs, n.Addr())
				}
			}
			return addrs
		},
		pass:    pass,
		secrets: []string{pass},
		cluster: c,
		acks:    1,
		faults:  chaosClusterFaults,
		strike: map[string]func(f *faulter) string{
			"reshard":  func(f *faulter) string { return f.reshard(f.rng) },
			"failover": func(f *faulter) string { return f.failover(f.rng) },
		},
	}
}

// The faults a chaos round on a cluster adds, by weight, to those of one
// server, which strike a node picked at random.
var chaosClusterFaults = []weighted[string]{
	{3, "reshard"},  // a round key's slot to another primary, left open up to 1.5s first
	{1, "failover"}, // the primary of a round key's slot killed, its replica promoted, it back
}

// reshard moves the slot of one of keys to another primary, leaving it
// open (TRYAGAIN to the scripts) for up to 1.5s before its keys move.
func (f *faulter) reshard(rng *rand.Rand) string {
	c := f.target.cluster
	key := f.keys[rng.IntN(len(f.keys))]
	slot := tokenSlot(key)
	from := c.Primary(f.t, slot)
	var others []clusterNode
	for _, n := range c.Nodes() {
		if n.Addr() != from.Addr() && isPrimary(n, f.target.pass) {
			others = append(others, n)
		}
	}
	to := others[rng.IntN(len(others))]
	open := time.Duration(rng.IntN(1500)) * time.Millisecond
	c.MigrateSlot(f.t, slot, to, open)
	return key + " to " + to.Addr() + ", open " + open.String()
}

// failover kills the primary of one of keys' slots, once no node is
// paused, waits for its replica to take over, and brings it back as that
// replica's replica.
func (f *faulter) failover(rng *rand.Rand) string {
	c := f.target.cluster
	key := f.keys[rng.IntN(len(f.keys))]
	victim := c.Primary(f.t, tokenSlot(key))
	time.Sleep(time.Until(f.pausedUntil))
	c.Kill(f.t, victim)
	c.WaitHealthy(f.t, clusterSettle)
	c.Restart(f.t, victim)
	c.WaitHealthy(f.t, clusterSettle)
	return key + "'s primary " + victim.Addr()
}

// isPrimary reports whether n, whose password is pass, says it is a
// primary.
func isPrimary(n clusterNode, pass string) bool {
	v, err := redisproc.Do(n.Addr(), pass, "ROLE")
	return err == nil && len(v.Elems) > 0 && v.Elems[0].Str == "master"
}
