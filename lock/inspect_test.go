package lock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

func mustInspect(t *testing.T, l *lock.Locker, key string) lock.Info {
	t.Helper()
	info, err := l.Inspect(context.Background(), key)
	require.NoError(t, err)
	return info
}

// requireFree checks that info is a free lock's, as read in mode.
func requireFree(t *testing.T, mode string, info lock.Info) {
	t.Helper()
	require.False(t, info.Held)
	require.Empty(t, info.Holder)
	require.Zero(t, info.TTL)
	require.Zero(t, info.Token)
	require.False(t, info.Wanted)
	if mode == "fair" {
		require.NotNil(t, info.Queue, "fair mode reads the queue")
	}
	require.Empty(t, info.Queue)
}

// owners are the queue's owners, in order.
func owners(info lock.Info) []string {
	o := []string{}
	for _, w := range info.Queue {
		o = append(o, w.Owner)
	}
	return o
}

func TestInspectHeldThenFree(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			const ttl = 5 * time.Second
			l := open(t, srv, modeOptions(mode, lock.WithTTL(ttl))...)
			requireFree(t, mode, mustInspect(t, l, mode))

			ls := mustLock(t, l, mode)
			info := mustInspect(t, l, mode)
			require.True(t, info.Held)
			require.Len(t, info.Holder, 8, "the start of the owner token, not all of it")
			require.Greater(t, info.TTL, ttl-time.Second)
			require.LessOrEqual(t, info.TTL, ttl)
			require.Equal(t, ls.Token(), info.Token)
			require.False(t, info.Wanted)
			require.Empty(t, info.Queue)

			mustUnlock(t, ls)
			requireFree(t, mode, mustInspect(t, l, mode))
		})
	}
}

func TestInspectFastWaiterAsks(t *testing.T) {
	srv := redistest.Start(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	holder, waiter := open(t, srv), open(t, srv)
	ls := mustLock(t, holder, "k")
	first := mustInspect(t, holder, "k")
	require.False(t, first.Wanted)

	got := make(chan *lock.Lease, 1)
	wg.Go(func() {
		next, err := waiter.Lock(context.Background(), "k")
		assert.NoError(t, err)
		got <- next
	})
	var info lock.Info
	redistest.Eventually(t, func() bool {
		info = mustInspect(t, holder, "k")
		return info.Wanted
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, first.Holder, info.Holder)
	require.Equal(t, ls.Token(), info.Token)
	require.Nil(t, info.Queue)

	mustUnlock(t, ls)
	next := <-got
	require.NotNil(t, next)
	info = mustInspect(t, holder, "k")
	require.True(t, info.Held)
	require.NotEqual(t, first.Holder, info.Holder)
	require.Equal(t, next.Token(), info.Token)
	require.False(t, info.Wanted, "the waiter's request went with its acquire")
	mustUnlock(t, next)
	requireFree(t, "fast", mustInspect(t, holder, "k"))
}

// A lock handed to a waiter that has not confirmed it is the waiter's, and
// its fencing token is not known yet: the counter still holds the
// releaser's, which Inspect shows, as nothing tells a hand-off from a
// holding.
func TestInspectFastHandOffInFlight(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv)
	ls := mustLock(t, l, "k")
	// A waiter process that hears its hand-off and never confirms it.
	listener := redistest.DialRaw(t, srv.Addr)
	listener.RoundTrip(t, resp.AppendCommand(nil, "SUBSCRIBE", "inspect-test"), 1)
	const owner = "ASKERTOKENXXXXXXXXXXXXXXXX"
	_, err := lock.AskAs(context.Background(), l, "k", owner, 7, "inspect-test")
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.True(t, mustInspect(t, l, "k").Wanted)

	mustUnlock(t, ls)
	info := mustInspect(t, l, "k")
	require.True(t, info.Held)
	require.Equal(t, owner[:8], info.Holder)
	require.Greater(t, info.Token, ls.Token(), "the hand-off issued the asker's token")
	require.False(t, info.Wanted, "the request went with the hand-off")
	require.Greater(t, info.TTL, 9*time.Second, "the releaser's TTL")
	require.LessOrEqual(t, info.TTL, 10*time.Second, "the releaser's TTL")
}

func TestInspectFairQueueInOrder(t *testing.T) {
	srv := redistest.Start(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	const queueLease = 3 * time.Second
	l := open(t, srv, lock.WithFair(), lock.WithQueueLease(queueLease))
	held := mustLock(t, l, "line")

	got := make(chan *lock.Lease, 3)
	for i := range 3 {
		w := open(t, srv, lock.WithFair(), lock.WithQueueLease(queueLease))
		wg.Go(func() {
			ls, err := w.Lock(context.Background(), "line")
			assert.NoError(t, err)
			got <- ls
		})
		// The next waiter arrives only once this one is queued.
		redistest.Eventually(t, func() bool { return len(mustInspect(t, l, "line").Queue) == i+1 }, 5*time.Second, time.Millisecond)
	}
	info := mustInspect(t, l, "line")
	require.True(t, info.Held)
	require.Equal(t, held.Token(), info.Token)
	require.True(t, info.Wanted)
	queue := owners(info)
	require.Len(t, queue, 3)
	for _, w := range info.Queue {
		require.Len(t, w.Owner, 8)
		require.Positive(t, w.LeaseLeft)
		require.LessOrEqual(t, w.LeaseLeft, queueLease)
	}

	// Each release hands the lock to the head of the queue shown.
	mustUnlock(t, held)
	for i := range 3 {
		ls := <-got
		require.NotNil(t, ls)
		info := mustInspect(t, l, "line")
		require.True(t, info.Held)
		require.Equal(t, queue[i], info.Holder)
		require.Equal(t, ls.Token(), info.Token)
		require.Equal(t, queue[i+1:], owners(info))
		require.Equal(t, i < 2, info.Wanted)
		mustUnlock(t, ls)
	}
	requireFree(t, "fair", mustInspect(t, l, "line"))
}

func TestInspectRefusesBadKeysAndClosedLockers(t *testing.T) {
	srv := redistest.Start(t)
	l := open(t, srv)
	for _, key := range []string{"", "}x", strings.Repeat("k", 1025)} {
		_, err := l.Inspect(context.Background(), key)
		require.ErrorIs(t, err, lock.ErrInvalid, "key %q", key)
	}
	closed, err := lock.Open(context.Background(), srv.Addr)
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	_, err = closed.Inspect(context.Background(), "k")
	require.ErrorIs(t, err, lock.ErrClosed)
}

// The RESP of an inspection's reply, for the fake server.
func bulk(s string) string     { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
func integer(n int64) string   { return fmt.Sprintf(":%d\r\n", n) }
func array(e ...string) string { return fmt.Sprintf("*%d\r\n", len(e)) + strings.Join(e, "") }

// inspectReply is a reply of the inspect script: the server's clock in ms,
// the lock's PTTL, then the lock, the fence, the request and the queue.
func inspectReply(now, pttl int64, holder, fence, request string, queue ...string) string {
	q := make([]string, len(queue))
	for i, s := range queue {
		q[i] = bulk(s)
	}
	return array(integer(now), integer(pttl), bulk(holder), bulk(fence), bulk(request), array(q...))
}

// onInspectFake is a Locker whose inspections the fake answers with reply.
func onInspectFake(t *testing.T, srv *redistest.Server, mode, reply string) *lock.Locker {
	return onFake(t, srv, func(_ int32, cmd []string) string {
		if (cmd[0] == "EVALSHA" || cmd[0] == "EVAL") && cmd[2] == "5" && len(cmd) == 3+5+1 {
			return reply
		}
		return "-ERR not an inspection\r\n"
	}, modeOptions(mode)...)
}

// The lease left is counted from the server's clock, which the reply
// carries, whatever this process's clock says.
func TestInspectCountsByTheServersClock(t *testing.T) {
	srv := redistest.Start(t)
	const now = 1_000_000
	l := onInspectFake(t, srv, "fair", inspectReply(now, 4200, "OWNERAAAAAAAAAAAAAAAAAAAAA", "1764000000000001", "",
		"OWNERBBBBBBBBBBBBBBBBBBBBB", fmt.Sprint(now+2500)+" 3 chan-1",
		"OWNERCCCCCCCCCCCCCCCCCCCCC", fmt.Sprint(now-10)+" 4 chan 2"))
	info := mustInspect(t, l, "k")
	require.Equal(t, lock.Info{
		Held:   true,
		Holder: "OWNERAAA",
		TTL:    4200 * time.Millisecond,
		Token:  1764000000000001,
		Wanted: true,
		Queue: []struct {
			Owner     string
			LeaseLeft time.Duration
		}{{"OWNERBBB", 2500 * time.Millisecond}, {"OWNERCCC", -10 * time.Millisecond}},
	}, info)
}

func TestInspectRefusesAGarbledReply(t *testing.T) {
	srv := redistest.Start(t)
	const now = 1_700_000_000_000
	for name, bad := range map[string]struct{ mode, reply string }{
		"not an array":            {"fast", ":1\r\n"},
		"short":                   {"fast", array(integer(now), integer(-2))},
		"no clock":                {"fast", array(bulk("now"), integer(-2), bulk(""), bulk(""), bulk(""), array())},
		"clock at zero":           {"fast", inspectReply(0, -2, "", "", "")},
		"PTTL below -2":           {"fast", inspectReply(now, -3, "", "", "")},
		"PTTL past a Duration":    {"fast", inspectReply(now, 1<<62, "x", "", "")},
		"holder an integer":       {"fast", array(integer(now), integer(100), integer(5), bulk(""), bulk(""), array())},
		"holder null":             {"fast", array(integer(now), integer(100), "$-1\r\n", bulk(""), bulk(""), array())},
		"a holder but no key":     {"fast", inspectReply(now, -2, "x", "", "")},
		"fence not a number":      {"fast", inspectReply(now, 100, "x", "abc", "")},
		"fence negative":          {"fast", inspectReply(now, 100, "x", "-5", "")},
		"fence zero":              {"fast", inspectReply(now, 100, "x", "0", "")},
		"fence past uint64":       {"fast", inspectReply(now, 100, "x", "99999999999999999999999", "")},
		"request garbled":         {"fast", inspectReply(now, 100, "x", "5", "owner-only")},
		"request without an id":   {"fast", inspectReply(now, 100, "x", "5", "owner x chan")},
		"a queue in fast mode":    {"fast", inspectReply(now, 100, "x", "5", "", "o", "1 2 c")},
		"a request in fair mode":  {"fair", inspectReply(now, 100, "x", "5", "o 1 c")},
		"queue odd":               {"fair", array(integer(now), integer(100), bulk("x"), bulk("5"), bulk(""), array(bulk("o")))},
		"queue not an array":      {"fair", array(integer(now), integer(100), bulk("x"), bulk("5"), bulk(""), integer(0))},
		"queue of integers":       {"fair", array(integer(now), integer(100), bulk("x"), bulk("5"), bulk(""), array(integer(1), integer(2)))},
		"entry missing":           {"fair", inspectReply(now, 100, "x", "5", "", "o", "")},
		"deadline not a number":   {"fair", inspectReply(now, 100, "x", "5", "", "o", "soon 1 c")},
		"deadline signed":         {"fair", inspectReply(now, 100, "x", "5", "", "o", "+5 1 c")},
		"deadline past int64":     {"fair", inspectReply(now, 100, "x", "5", "", "o", "99999999999999999999 1 c")},
		"deadline past Duration":  {"fair", inspectReply(now, 100, "x", "5", "", "o", "9223372036854775807 1 c")},
		"entry without a channel": {"fair", inspectReply(now, 100, "x", "5", "", "o", "5 1")},
	} {
		t.Run(name, func(t *testing.T) {
			l := onInspectFake(t, srv, bad.mode, bad.reply)
			info, err := l.Inspect(context.Background(), "k")
			t.Log(err)
			require.ErrorIs(t, err, resp.ErrProtocol)
			require.Contains(t, err.Error(), `lock "k": inspect`)
			require.Zero(t, info)
		})
	}
}

func TestInspectPassesOnAServerError(t *testing.T) {
	srv := redistest.Start(t)
	l := onInspectFake(t, srv, "fast", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
	_, err := l.Inspect(context.Background(), "k")
	require.ErrorIs(t, err, resp.WrongType)
	require.NotErrorIs(t, err, resp.ErrProtocol)
}

// TestInspectReportsKeysOfAnotherType on a real server: a key of a type
// baton never writes at one of the lock's names is the server's
// WRONGTYPE (resp.WrongType), and a value of the right type that baton
// never writes is resp.ErrProtocol; neither is the other, and nothing is
// changed.
func TestInspectReportsKeysOfAnotherType(t *testing.T) {
	srv := redistest.Start(t)
	for _, tt := range []struct {
		mode, key string
		setUp     [][]string
		want      error
	}{
		{"fast", "lock a hash", [][]string{{"HSET", "baton:{k}", "f", "v"}}, resp.WrongType},
		{"fair", "queue a string", [][]string{{"SET", "baton:{k}", "o"}, {"SET", "baton:{k}:queue", "x"}}, resp.WrongType},
		{"fast", "fence not a number", [][]string{{"SET", "baton:{k}", "o", "PX", "10000"}, {"SET", "baton:{k}:fence", "abc"}}, resp.ErrProtocol},
	} {
		t.Run(tt.mode+"/"+tt.key, func(t *testing.T) {
			srv.Do(t, "FLUSHALL")
			for _, cmd := range tt.setUp {
				srv.Do(t, cmd...)
			}
			l := open(t, srv, modeOptions(tt.mode)...)
			_, err := l.Inspect(context.Background(), "k")
			require.ErrorIs(t, err, tt.want)
			for _, other := range []error{resp.WrongType, resp.ErrProtocol} {
				if other != tt.want {
					require.NotErrorIs(t, err, other)
				}
			}
			require.Contains(t, err.Error(), `lock "k": inspect`)
			require.EqualValues(t, len(tt.setUp), srv.Do(t, "DBSIZE").Int, "nothing changed")
		})
	}
}
