package manager_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
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

// eventually is require.Eventually for conditions that may fail the test,
// such as those calling srv.Do: it polls cond every tick on the test's own
// goroutine, where FailNow is allowed, and fails the test if cond does not
// hold within wait.
func eventually(t testing.TB, cond func() bool, wait, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if !time.Now().Before(deadline) {
			require.Fail(t, "Condition never satisfied", msgAndArgs...)
		}
		time.Sleep(tick)
	}
}

func newManager(t testing.TB, l *lock.Locker, opts ...manager.Option) *manager.Manager[counter] {
	t.Helper()
	m := manager.New[counter](l, opts...)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}
