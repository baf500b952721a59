package redisproc_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// TestMain fails the run if any goroutine outlives the tests: every one the
// package starts must have been stopped and waited for by its owner.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}

// start starts a server that is stopped at the test's cleanup, skipping
// the test, or failing it, as redistest does when there is no redis-server.
func start(t *testing.T, opts ...redisproc.Option) *redisproc.Server {
	t.Helper()
	return redistest.Start(t, opts...).Server
}

// do sends one command with Server.Do and requires that it went through.
func do(t *testing.T, s *redisproc.Server, args ...string) resp.Value {
	t.Helper()
	v, err := s.Do(args...)
	require.NoError(t, err)
	return v
}

// requireEmpty requires that dir holds nothing: a server removed what it
// made there.
func requireEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}
