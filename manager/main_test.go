package manager_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// TestMain starts a throwaway redis-server for the examples (see
// example_test.go's redisAddr) and fails the run if any goroutine outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(redistest.WithExampleServer(m, &redisAddr)))
}

// counter is the state most tests keep.
type counter struct {
	N int `json:"n"`
}

func increment(c *counter) error {
	c.N++
	return nil
}

func openLocker(t testing.TB, srv *redistest.Server, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.Open(context.Background(), srv.Addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func newManager(t testing.TB, l *lock.Locker, opts ...manager.Option) *manager.Manager[counter] {
	t.Helper()
	m := manager.New[counter](l, opts...)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}
