package integration_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// server is one Redis server under test, a container or a process. Its
// methods that take a testing.TB fail the test when they cannot do their
// job; like t.Fatal they must be called on the test's goroutine.
type server interface {
	// Addr is the host:port of its plain TCP listener on loopback; it
	// stays the same across Restart.
	Addr() string
	// TLSAddr is the host:port of its TLS listener, "" without spec.tls.
	TLSAddr() string
	// TLSConfig trusts the server's throwaway CA; nil without spec.tls.
	TLSConfig() *tls.Config
	// UnixSocket is its socket's path, "" without spec.unix.
	UnixSocket() string
	// Do sends one command as the default user on a connection of its
	// own, apart from the code under test; an error reply is a Value.
	Do(t testing.TB, args ...string) resp.Value
	// Restart stops the server and starts it again on the same
	// addresses, without its data, and returns once it answers PING.
	Restart(t testing.TB)
	// Pause freezes the server for d, as a stalled host would: the
	// kernel still accepts connections and buffers commands. It
	// returns once the server is frozen.
	Pause(t testing.TB, d time.Duration)
	// Resume ends a pause now; without one it does nothing.
	Resume()
}

// spec is what a test asks of its server.
type spec struct {
	config []string // redis.conf lines, such as "io-threads 4"
	tls    bool     // also listen with TLS, on a certificate made for the test
	unix   bool     // also listen on a unix socket (the process backend only)
}

// backend starts servers of one kind: containers of one image, or
// redis-server processes.
type backend struct {
	name    string // the subtest's name: the image, or "process"
	about   string // one line for the log: the backend and the server's version
	process bool   // servers are processes, which can listen on a unix socket
	start   func(t *testing.T, s spec) server
	// startCluster starts a Redis Cluster of primaries, each with
	// replicasEach replicas, and returns once it is healthy; it is
	// removed when the test ends.
	startCluster func(t *testing.T, primaries, replicasEach int) clusterUnderTest
	// startSentinels starts a primary with two replicas and three
	// sentinels that watch it, and returns once the sentinels know them
	// all; they are removed when the test ends.
	startSentinels func(t *testing.T) sentinelsUnderTest
	broken         error // set when this backend cannot start servers: its tests fail with it
}

// forEachBackend runs f as a subtest per backend of this run, named by
// the backend; it skips the test when there is none (or fails it, where
// BATON_REQUIRE_REDIS=1 asks for a server).
func forEachBackend(t *testing.T, f func(t *testing.T, b *backend)) {
	t.Helper()
	if len(suite.backends) == 0 {
		redistest.SkipIfNoBinary(t, suite.unavailable)
		t.Fatal(suite.unavailable)
	}
	for _, b := range suite.backends {
		t.Run(strings.ReplaceAll(b.name, "/", "_"), func(t *testing.T) {
			if b.broken != nil {
				t.Fatal(b.broken)
			}
			f(t, b)
		})
	}
}

// processServer is a redis-server process started by redistest.
type processServer struct {
	*redistest.Server
}

func (p processServer) Addr() string       { return p.Server.Addr }
func (p processServer) TLSAddr() string    { return p.Server.TLSAddr }
func (p processServer) UnixSocket() string { return p.Server.UnixSocket }

// processBackend runs each server as a redis-server process from PATH.
func processBackend(about string) *backend {
	return &backend{
		name: "process", about: about, process: true,
		start: func(t *testing.T, s spec) server {
			var opts []redistest.Option
			if len(s.config) > 0 {
				opts = append(opts, redistest.WithConfig(s.config...))
			}
			if s.tls {
				opts = append(opts, redistest.WithTLS())
			}
			if s.unix {
				opts = append(opts, redistest.WithUnixSocket())
			}
			return processServer{redistest.Start(t, opts...)}
		},
		startCluster: func(t *testing.T, primaries, replicasEach int) clusterUnderTest {
			return startProcessCluster(t, primaries, replicasEach)
		},
		startSentinels: startProcessSentinels,
	}
}
