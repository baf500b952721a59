package redistest

import (
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
)

// Sentinels is a primary, its replicas and the sentinels that watch them,
// started for one test with StartSentinels. Its methods that take a
// testing.TB fail the test where redisproc's return an error; URL and
// Stop are redisproc's.
type Sentinels struct {
	*redisproc.Sentinels
}

// StartSentinels starts a primary with replicas replicas and sentinels
// sentinels (with sentinelConfig's lines) with redisproc.StartSentinels,
// and returns once the sentinels know them all. Everything is stopped at t.Cleanup. It skips the test if
// redis-server or redis-sentinel is not on PATH, or fails it then if
// RequireRedisEnv is set to 1. Like t.Fatal, it must be called on the
// test's goroutine.
func StartSentinels(t testing.TB, replicas, sentinels int, sentinelConfig ...string) *Sentinels {
	t.Helper()
	s, err := redisproc.StartSentinels(replicas, sentinels, sentinelConfig...)
	SkipIfNoBinary(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Sentinels{s}
}

// Primary is the node that every sentinel names the primary and that
// says it is one.
func (s *Sentinels) Primary(t testing.TB) *Server {
	t.Helper()
	p, err := s.Sentinels.Primary()
	if err != nil {
		t.Fatal(err)
	}
	return &Server{p}
}

// KillPrimary crashes the primary, and returns it once it is down.
func (s *Sentinels) KillPrimary(t testing.TB) *Server {
	t.Helper()
	p, err := s.Sentinels.KillPrimary()
	if err != nil {
		t.Fatal(err)
	}
	return &Server{p}
}

// WaitFailover waits, up to timeout, until the sentinels have promoted a
// node other than old, which it returns.
func (s *Sentinels) WaitFailover(t testing.TB, old *Server, timeout time.Duration) *Server {
	t.Helper()
	p, err := s.Sentinels.WaitFailover(old.Server, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{p}
}

// Failover has the sentinels promote a replica and waits, up to timeout,
// until it is the settled primary, which it returns.
func (s *Sentinels) Failover(t testing.TB, timeout time.Duration) *Server {
	t.Helper()
	p, err := s.Sentinels.Failover(timeout)
	if err != nil {
		t.Fatal(err)
	}
	return &Server{p}
}

// RestartReplica starts n, a data node that was killed, again as a
// replica of the primary the sentinels name now, and waits, up to
// timeout, until every node replicates from that primary.
func (s *Sentinels) RestartReplica(t testing.TB, n *Server, timeout time.Duration) {
	t.Helper()
	if err := s.Sentinels.RestartReplica(n.Server, timeout); err != nil {
		t.Fatal(err)
	}
}
