package lock_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/hangreport"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// TestMain starts a throwaway redis-server for the examples (see
// example_test.go's redisAddr) and fails the run if any goroutine outlives
// the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(redistest.WithExampleServer(m, &redisAddr)))
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
	require.NoError(t, addOne(c, key))
}

// addOne is incrementPlainly returning its error instead of failing the
// test, for goroutines other than the test's.
func addOne(c *conn.Conn, key string) error {
	ctx := context.Background()
	v, err := c.Do(ctx, "GET", key)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(v.Str)
	_, err = c.Do(ctx, "SET", key, strconv.Itoa(n+1))
	return err
}

// holdWhile takes key's lock on l, runs fn (if not nil) under it and lets
// go. It reports failures with assert, never FailNow, so it may run on any
// goroutine, where mustLock and mustUnlock may not; it returns whether the
// lock was taken and released and fn returned true.
func holdWhile(t testing.TB, l *lock.Locker, key string, fn func(*lock.Lease) bool) bool {
	t.Helper()
	ls, err := l.Lock(context.Background(), key)
	if !assert.NoError(t, err) {
		return false
	}
	ok := fn == nil || fn(ls)
	return assert.NoError(t, ls.Unlock(context.Background())) && ok
}

// modeOptions are opts for a Locker in mode: "fair", or any other name for
// fast mode.
func modeOptions(mode string, opts ...lock.Option) []lock.Option {
	if mode == "fair" {
		return append(opts, lock.WithFair())
	}
	return opts
}
