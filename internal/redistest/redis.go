package redistest

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/resp"
)

// RequireRedisEnv names the environment variable that, set to 1, turns a
// missing redis-server from a skipped test into a failed one, so that CI
// cannot pass by testing nothing.
const RequireRedisEnv = "BATON_REQUIRE_REDIS"

// Option configures a Server started by Start, or every node of a Cluster
// started by StartCluster.
type Option = redisproc.Option

// The options of Start, documented in package redisproc.
var (
	WithConfig     = redisproc.WithConfig
	WithUnixSocket = redisproc.WithUnixSocket
	WithTLS        = redisproc.WithTLS
	WithSharedTLS  = redisproc.WithSharedTLS
	WithCluster    = redisproc.WithCluster
	WithBinary     = redisproc.WithBinary
)

// Server is a redis-server process started for one test. Its methods that
// take a testing.TB fail the test where redisproc's return an error; the
// others (Stop, Resume, TLSConfig) and the address fields are redisproc's.
type Server struct {
	*redisproc.Server
}

// Start starts a redis-server for the test with redisproc.Start and
// returns once it answers PING. The server is stopped, and its files
// removed, at t.Cleanup. Start skips the test if no redis-server is on
// PATH, or fails it if RequireRedisEnv is set to 1. Like t.Fatal, it must
// be called on the test's goroutine.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := redisproc.Start(opts...)
	SkipIfNoBinary(t, err)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return &Server{s}
}

// SkipIfNoBinary skips the test if err says that there is no redis-server
// on PATH (redisproc.ErrNoBinary), or fails it then if RequireRedisEnv is
// set to 1. Any other err, nil included, it leaves to the caller. Like
// t.Fatal, it must be called on the test's goroutine.
func SkipIfNoBinary(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, redisproc.ErrNoBinary) {
		return
	}
	const msg = "redistest: redis-server (or, for sentinels, redis-sentinel) not found on PATH; install it (apt-get install redis-server redis-sentinel) to run this test"
	if os.Getenv(RequireRedisEnv) == "1" {
		t.Fatalf("%s (%s=1 requires it)", msg, RequireRedisEnv)
	}
	t.Skipf("%s, or set %s=1 to fail instead of skipping", msg, RequireRedisEnv)
}

// Do is redisproc's Server.Do, for setting up and inspecting a server from
// a test, apart from the client code under test. It calls t.Fatal if the
// command cannot be sent or its reply read, so it must run on the test's
// goroutine; an error reply is returned as a Value.
func (s *Server) Do(t testing.TB, args ...string) resp.Value {
	t.Helper()
	v, err := s.Server.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Restart is redisproc's Server.Restart: the same configuration on the
// same addresses, with no data kept. It calls t.Fatal if the server does
// not come back, so it must run on the test's goroutine.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.Server.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Pause is redisproc's Server.Pause: it freezes the server for d. The
// server is thawed at the test's cleanup at the latest. Pause skips the
// test where processes cannot be frozen (Windows). Like t.Fatal, it must be
// called on the test's goroutine.
func (s *Server) Pause(t testing.TB, d time.Duration) {
	t.Helper()
	err := s.Server.Pause(d)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		t.Skip(err)
	case err != nil:
		t.Fatal(err)
	}
	t.Cleanup(s.Server.Resume)
}
