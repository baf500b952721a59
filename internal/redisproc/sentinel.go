package redisproc

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// SentinelMaster is the name under which a Sentinels' sentinels know
// their primary.
const SentinelMaster = "mymaster"

// Sentinels is a primary, its replicas and the sentinels that watch them,
// all on loopback: the servers a Redis Sentinel deployment has. Nodes[0]
// is the first primary; a failover makes another the primary (Primary
// says which).
type Sentinels struct {
	Nodes     []*Server // the data nodes
	Sentinels []*Server // redis-sentinel processes
}

// sentinelDownAfter is how long a sentinel waits before it takes a
// silent primary for down: short, so that a test that kills a primary
// sees its failover within seconds.
const sentinelDownAfter = 500 * time.Millisecond

// StartSentinels starts a primary, replicas replicas of it and sentinels
// sentinels (redis-sentinel from PATH) that watch it with a quorum of a
// majority, and returns once every sentinel knows the primary, each
// replica and each other sentinel. sentinelConfig are lines added to each
// sentinel's configuration (requirepass, say, with sentinel sentinel-pass
// for the sentinels to reach each other). On failure it stops what it
// started. The caller must call Stop.
func StartSentinels(replicas, sentinels int, sentinelConfig ...string) (*Sentinels, error) {
	s := &Sentinels{}
	fail := func(err error) (*Sentinels, error) {
		s.Stop()
		return nil, fmt.Errorf("redisproc: sentinels: %w", err)
	}
	primary, err := Start()
	if err != nil {
		return fail(err)
	}
	s.Nodes = append(s.Nodes, primary)
	host, port := "127.0.0.1", strconv.Itoa(primary.port)
	for range replicas {
		r, err := Start(WithConfig("replicaof " + host + " " + port))
		if err != nil {
			return fail(err)
		}
		s.Nodes = append(s.Nodes, r)
	}
	quorum := sentinels/2 + 1
	for range sentinels {
		sn, err := Start(WithBinary("redis-sentinel"), WithConfig(
			fmt.Sprintf("sentinel monitor %s %s %s %d", SentinelMaster, host, port, quorum),
			fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfter.Milliseconds()),
			fmt.Sprintf("sentinel failover-timeout %s 5000", SentinelMaster),
			strings.Join(sentinelConfig, "\n"),
		))
		if err != nil {
			return fail(err)
		}
		s.Sentinels = append(s.Sentinels, sn)
	}
	if err := s.waitKnown(30 * time.Second); err != nil {
		return fail(err)
	}
	return s, nil
}

// waitKnown waits until every sentinel knows the replicas and the other
// sentinels, and every replica has synced with the primary.
func (s *Sentinels) waitKnown(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := s.known()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not settled after %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Sentinels) known() error {
	for _, sn := range s.live() {
		v, err := sn.Do("SENTINEL", "REPLICAS", SentinelMaster)
		if err != nil {
			return err
		}
		if len(v.Elems) != len(s.Nodes)-1 {
			return fmt.Errorf("sentinel %s knows %d replicas, want %d", sn.Addr, len(v.Elems), len(s.Nodes)-1)
		}
		v, err = sn.Do("SENTINEL", "SENTINELS", SentinelMaster)
		if err != nil {
			return err
		}
		if len(v.Elems) != len(s.Sentinels)-1 {
			return fmt.Errorf("sentinel %s knows %d other sentinels, want %d", sn.Addr, len(v.Elems), len(s.Sentinels)-1)
		}
	}
	for _, n := range s.Nodes {
		if !n.running() {
			continue
		}
		role, err := n.Do("ROLE")
		if err != nil {
			return err
		}
		if len(role.Elems) > 3 && role.Elems[0].Str == "slave" && role.Elems[3].Str != "connected" {
			return fmt.Errorf("replica %s is %s", n.Addr, role.Elems[3].Str)
		}
	}
	return nil
}

// replicatingFrom reports an error unless every running node but primary
// is a replica of it, connected.
func (s *Sentinels) replicatingFrom(primary *Server) error {
	for _, n := range s.Nodes {
		if n == primary || !n.running() {
			continue
		}
		role, err := n.Do("ROLE")
		if err != nil {
			return err
		}
		e := role.Elems
		if len(e) < 4 || e[0].Str != "slave" || e[2].Int != int64(primary.port) || e[3].Str != "connected" {
			return fmt.Errorf("%s is not yet a connected replica of %s: %v", n.Addr, primary.Addr, role)
		}
	}
	return nil
}

// URL is the address that reaches the primary through the sentinels:
// redis+sentinel://<sentinel>,<sentinel>,.../mymaster.
func (s *Sentinels) URL() string {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + SentinelMaster
}

// Primary is the data node that every running sentinel names as the primary and
// that says it is one (ROLE), or an error if they do not agree yet.
func (s *Sentinels) Primary() (*Server, error) {
	var named string
	for _, sn := range s.live() {
		v, err := sn.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
		if err != nil {
			return nil, err
		}
		if len(v.Elems) != 2 {
			return nil, fmt.Errorf("sentinel %s names no primary", sn.Addr)
		}
		addr := net.JoinHostPort(v.Elems[0].Str, v.Elems[1].Str)
		if named != "" && addr != named {
			return nil, fmt.Errorf("the sentinels name %s and %s", named, addr)
		}
		named = addr
	}
	for _, n := range s.Nodes {
		if n.Addr != named {
			continue
		}
		role, err := n.Do("ROLE")
		if err != nil {
			return nil, err
		}
		if len(role.Elems) == 0 || role.Elems[0].Str != "master" {
			return nil, fmt.Errorf("%s, named the primary, is a %s", named, role.Elems[0].Str)
		}
		return n, nil
	}
	return nil, fmt.Errorf("the sentinels name %s, none of the nodes", named)
}

// Failover has the sentinels promote a replica (SENTINEL FAILOVER) and
// waits until every sentinel names it and it says it is the primary, and
// the other nodes replicate from it.
func (s *Sentinels) Failover(timeout time.Duration) (*Server, error) {
	old, err := s.Primary()
	if err != nil {
		return nil, err
	}
	live := s.live()
	if len(live) == 0 {
		return nil, errors.New("redisproc: no sentinel runs")
	}
	if _, err := live[0].Do("SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return nil, err
	}
	return s.waitPrimary(old, timeout)
}

// live is the sentinels whose process runs: a test may have stopped some.
func (s *Sentinels) live() []*Server {
	var live []*Server
	for _, sn := range s.Sentinels {
		if sn.running() {
			live = append(live, sn)
		}
	}
	return live
}

// KillPrimary crashes the primary (SIGKILL: it tells nobody) and returns
// it once its process has exited; it stays down. WaitFailover waits for
// the sentinels to replace it.
func (s *Sentinels) KillPrimary() (*Server, error) {
	old, err := s.Primary()
	if err != nil {
		return nil, err
	}
	if err := old.kill(); err != nil {
		return nil, fmt.Errorf("redisproc: killing the primary %s: %w", old.Addr, err)
	}
	return old, nil
}

// WaitFailover waits, up to timeout, until a node other than old is the
// settled primary, which it returns.
func (s *Sentinels) WaitFailover(old *Server, timeout time.Duration) (*Server, error) {
	return s.waitPrimary(old, timeout)
}

// waitPrimary waits until a node other than old is the settled primary:
// the sentinels name it, and every other node replicates from it.
func (s *Sentinels) waitPrimary(old *Server, timeout time.Duration) (*Server, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := s.Primary()
		if err == nil && p != old {
			if err = s.known(); err == nil {
				err = s.replicatingFrom(p)
			}
			if err == nil {
				return p, nil
			}
		}
		if err == nil {
			err = errors.New("the old primary is still named")
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("redisproc: no new primary after %v: %w", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops every process.
func (s *Sentinels) Stop() {
	for _, sn := range s.Sentinels {
		sn.Stop()
	}
	for _, n := range s.Nodes {
		n.Stop()
	}
}
