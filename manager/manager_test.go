package manager_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

func TestModifyAndGet(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			var opts []lock.Option
			if mode == "fair" {
				opts = append(opts, lock.WithFair())
			}
			m := manager.New[counter](openLocker(t, srv, opts...))
			ctx := context.Background()

			v, err := m.Get(ctx, "session-1")
			require.NoError(t, err)
			require.Zero(t, v.N, "missing state is the zero value")
			for range 3 {
				require.NoError(t, m.Modify(ctx, "session-1", increment))
			}
			v, err = m.Get(ctx, "session-1")
			require.NoError(t, err)
			require.Equal(t, 3, v.N)
			require.JSONEq(t, `{"n":3}`, srv.Do(t, "GET", "baton:{session-1}:state").Str)
			ttl := srv.Do(t, "PTTL", "baton:{session-1}:state").Int
			require.Greater(t, ttl, int64(59*time.Minute/time.Millisecond), "the default state TTL is an hour")
			require.Zero(t, srv.Do(t, "EXISTS", "baton:{session-1}").Int, "the lock is released")
		})
	}
}

// TestConcurrentIncrementsAreExact: 4 instances × 8 goroutines × 250
// increments on 4 tokens, in each lock mode, with and without hold, on one
// server and on a Redis Cluster of three primaries, where the tokens'
// locks and states are spread over every primary, with replicas and
// every write acknowledged by one (WithReplicaAck) too.
func TestConcurrentIncrementsAreExact(t *testing.T) {
	servers := map[string]struct {
		start func(t *testing.T) string
		opts  []lock.Option
	}{
		"one server": {start: func(t *testing.T) string { return redistest.Start(t).Addr }},
		"cluster": {start: func(t *testing.T) string {
			c := redistest.StartCluster(t, 3, 0)
			return "redis+cluster://" + strings.Join(c.Seeds(), ",")
		}},
		"cluster with replicas and WithReplicaAck": {
			start: func(t *testing.T) string {
				c := redistest.StartCluster(t, 3, 1)
				return "redis+cluster://" + strings.Join(c.Seeds(), ",")
			},
			opts: []lock.Option{lock.WithReplicaAck(1, time.Second)},
		},
	}
	for name, srv := range servers {
		t.Run(name, func(t *testing.T) {
			addr := srv.start(t)
			for _, sc := range []struct {
				name string
				lock []lock.Option
				hold time.Duration
			}{
				{name: "fast"},
				{name: "fast+hold", hold: time.Second},
				{name: "fair", lock: []lock.Option{lock.WithFair()}},
				{name: "fair+hold", lock: []lock.Option{lock.WithFair()}, hold: time.Second},
			} {
				t.Run(sc.name, func(t *testing.T) {
					incrementConcurrently(t, addr, sc.name+"-t", append(sc.lock, srv.opts...), sc.hold)
				})
			}
		})
	}
}

// incrementConcurrently runs TestConcurrentIncrementsAreExact's increments
// on the tokens prefix0 to prefix3 at addr.
func incrementConcurrently(t *testing.T, addr, prefix string, lockOpts []lock.Option, hold time.Duration) {
	ctx := context.Background()
	var opts []manager.Option
	if hold > 0 {
		opts = append(opts, manager.WithHold(hold))
	}
	openAt := func(opts ...lock.Option) *lock.Locker {
		l, err := lock.Open(ctx, addr, opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		return l
	}
	var wg sync.WaitGroup
	for range 4 {
		m := newManager(t, openAt(lockOpts...), opts...)
		for g := range 8 {
			wg.Go(func() {
				for i := range 250 {
					if !assert.NoError(t, m.Modify(ctx, prefix+strconv.Itoa((g+i)%4), increment)) {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	check := manager.New[counter](openAt())
	for i := range 4 {
		v, err := check.Get(ctx, prefix+strconv.Itoa(i))
		require.NoError(t, err)
		require.Equal(t, 2000, v.N)
	}
}

func TestALeaseLostDuringFnWritesNothing(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	slow := manager.New[counter](openLocker(t, srv, lock.WithTTL(100*time.Millisecond)))
	fast := manager.New[counter](openLocker(t, srv))

	errs := make(chan error, 1)
	go func() {
		errs <- slow.Modify(ctx, "k", func(c *counter) error {
			time.Sleep(300 * time.Millisecond) // the lease runs out meanwhile
			c.N = 1000
			return nil
		})
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, fast.Modify(ctx, "k", increment)) // waits out the 100ms TTL
	err := <-errs
	require.ErrorIs(t, err, lock.ErrNotHeld)
	v, err := fast.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 1, v.N, "the lost lease's write-back must not land")
}

func TestAFailingFnWritesNothingAndReleases(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := openLocker(t, srv, lock.WithTTL(time.Minute))
	m := manager.New[counter](l)
	require.NoError(t, m.Modify(ctx, "k", increment))
	boom := errors.New("boom")
	err := m.Modify(ctx, "k", func(c *counter) error { c.N = 99; return boom })
	require.ErrorIs(t, err, boom)
	v, err := m.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, 1, v.N)
	requireReleased(t, l, "k")
}

func TestAPanickingFnReleasesAndPanics(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := openLocker(t, srv, lock.WithTTL(time.Minute))
	m := manager.New[counter](l)
	require.PanicsWithValue(t, "fn broke", func() {
		_ = m.Modify(ctx, "k", func(*counter) error { panic("fn broke") })
	})
	requireReleased(t, l, "k")
	require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}:state").Int)
}

func TestUndecodableStateIsReportedAndKept(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	l := openLocker(t, srv, lock.WithTTL(time.Minute))
	m := manager.New[counter](l)
	srv.Do(t, "SET", "baton:{k}:state", "not json")
	err := m.Modify(ctx, "k", increment)
	require.ErrorIs(t, err, manager.ErrUndecodable)
	require.ErrorContains(t, err, `"k"`)
	require.ErrorContains(t, err, `"baton:{k}:state"`)
	_, err = m.Get(ctx, "k")
	require.ErrorIs(t, err, manager.ErrUndecodable)
	require.Equal(t, "not json", srv.Do(t, "GET", "baton:{k}:state").Str)
	requireReleased(t, l, "k")
}

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	m := manager.New[counter](openLocker(t, srv))
	require.ErrorIs(t, m.Modify(ctx, "", increment), manager.ErrInvalid)
	require.ErrorIs(t, m.Modify(ctx, "k", nil), manager.ErrInvalid)
	_, err := m.Get(ctx, "")
	require.ErrorIs(t, err, manager.ErrInvalid)
	wrong := manager.New[counter](openLocker(t, srv), manager.WithCodec[int](manager.JSON[int]{}))
	require.ErrorIs(t, wrong.Modify(ctx, "k", increment), manager.ErrInvalid)
	require.Equal(t, int64(0), srv.Do(t, "DBSIZE").Int)
}

// decimal stores an int as its decimal text.
type decimal struct{}

func (decimal) Encode(v *int) ([]byte, error) { return []byte(strconv.Itoa(*v)), nil }
func (decimal) Decode(data []byte, v *int) error {
	n, err := strconv.Atoi(string(data))
	*v = n
	return err
}

func TestACustomCodecAndPrefix(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	m := manager.New[int](openLocker(t, srv), manager.WithCodec[int](decimal{}), manager.WithKeyPrefix("app:"))
	require.NoError(t, m.Modify(ctx, "k", func(n *int) error { *n += 41; return nil }))
	require.NoError(t, m.Modify(ctx, "k", func(n *int) error { *n++; return nil }))
	require.Equal(t, "42", srv.Do(t, "GET", "app:{k}:state").Str)
}

func TestACancelledContextDuringFnStillReleases(t *testing.T) {
	srv := redistest.Start(t)
	l := openLocker(t, srv, lock.WithTTL(time.Minute))
	m := manager.New[counter](l)
	ctx, cancel := context.WithCancel(context.Background())
	err := m.Modify(ctx, "k", func(c *counter) error { cancel(); c.N = 7; return nil })
	if err != nil {
		require.ErrorIs(t, err, context.Canceled)
	}
	redistest.Eventually(t, func() bool { return srv.Do(t, "EXISTS", "baton:{k}").Int == 0 }, 5*time.Second, time.Millisecond)
	require.Equal(t, `{"n":7}`, srv.Do(t, "GET", "baton:{k}:state").Str)
}

func TestAnUncontendedModifyIsTwoWrites(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var writes [][]byte
	tap := conn.WithTap(func(dir conn.Direction, p []byte) {
		if dir == conn.Write {
			mu.Lock()
			writes = append(writes, append([]byte(nil), p...))
			mu.Unlock()
		}
	})
	m := manager.New[counter](openLocker(t, srv, lock.WithConnOptions(tap)))
	mu.Lock()
	writes = nil
	mu.Unlock()
	require.NoError(t, m.Modify(context.Background(), "k", increment))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, len(writes), "writes: %q", writes)
	require.True(t, bytes.Contains(writes[0], []byte("EVALSHA")) && bytes.Contains(writes[0], []byte("$3\r\nGET\r\n")), "acquire and load in one write")
	require.True(t, bytes.HasPrefix(writes[1], []byte("*1\r\n$4\r\nPING\r\n*")), "write-back and release after a PING, in one write")
}

// requireReleased checks that the lock for key is free, by taking it.
func requireReleased(t *testing.T, l *lock.Locker, key string) {
	t.Helper()
	ls, err := l.TryLock(context.Background(), key)
	require.NoError(t, err, "the lock was released")
	require.NoError(t, ls.Unlock(context.Background()))
}

// TestATokenWithBracesOnACluster: a token's lock and state hash by the tag
// of <prefix>{token}, which the token's own braces do not decide; Modify
// and Get on such tokens reach their node on a cluster.
func TestATokenWithBracesOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	l, err := lock.Open(ctx, "redis+cluster://"+strings.Join(c.Seeds(), ","))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	m := newManager(t, l)
	for _, token := range []string{"a{b}c", "{x}y", "m{n}"} {
		for range 3 {
			require.NoError(t, m.Modify(ctx, token, increment), token)
		}
		v, err := m.Get(ctx, token)
		require.NoError(t, err, token)
		require.Equal(t, 3, v.N, token)
	}
}
