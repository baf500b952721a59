package lock_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open returns a Locker on srv, closed when the test ends.
func open(t testing.TB, srv *redistest.Server, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.Open(context.Background(), srv.Addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func mustLock(t testing.TB, l *lock.Locker, key string) *lock.Lease {
	t.Helper()
	ls, err := l.Lock(context.Background(), key)
	require.NoError(t, err)
	return ls
}

func mustUnlock(t testing.TB, ls *lock.Lease) {
	t.Helper()
	require.NoError(t, ls.Unlock(context.Background()))
}

// incrementPlainly adds one to the integer at key with a GET and a SET: a
// read-modify-write that only the lock keeps exact.
func incrementPlainly(t testing.TB, c *conn.Conn, key string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.Do(ctx, "GET", key)
	require.NoError(t, err)
	n, _ := strconv.Atoi(v.Str)
	_, err = c.Do(ctx, "SET", key, strconv.Itoa(n+1))
	require.NoError(t, err)
}
