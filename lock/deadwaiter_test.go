package lock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// maxHandOffPastADeadWaiter is how soon after a release the live waiter
// behind a dead one must hold the lock: well under the 500ms hand-off
// window that a dead waiter taken for alive would keep it.
const maxHandOffPastADeadWaiter = 250 * time.Millisecond

// A waiter whose process is gone is skipped at hand-off, whoever else
// subscribes: a pattern subscriber (an operator's PSUBSCRIBE *, a pub/sub
// bridge) hears every PUBLISH, and PUBLISH counts it among the receivers,
// but it is no waiter.
func TestADeadWaiterIsSkippedDespiteAPatternSubscriber(t *testing.T) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			srv := redistest.Start(t)
			holder := open(t, srv, modeOptions(mode, lock.WithTTL(time.Minute))...)
			live := open(t, srv, modeOptions(mode)...)
			held := mustLock(t, holder, "k")
			queueDeadWaiter(t, srv, mode)

			got := make(chan *lock.Lease, 1)
			go func() {
				ls, err := live.Lock(context.Background(), "k")
				if err != nil {
					ls = nil
				}
				got <- ls
			}()
			if mode == "fair" {
				waitQueued(t, srv, 2)
			} else {
				redistest.Eventually(t, func() bool { return srv.Do(t, "LLEN", "baton:{k}:wanted").Int == 2 },
					10*time.Second, time.Millisecond, "the live waiter never asked")
			}
			redistest.DialRaw(t, srv.Addr).RoundTrip(t, resp.AppendCommand(nil, "PSUBSCRIBE", "*"), 1)

			released := time.Now()
			mustUnlock(t, held)
			ls := <-got
			took := time.Since(released)
			t.Logf("the live waiter held the lock %v after the release", took)
			require.NotNil(t, ls, "the live waiter's Lock failed")
			require.Less(t, took, maxHandOffPastADeadWaiter, "the dead waiter kept the lock")
			mustUnlock(t, ls)
		})
	}
}

// queueDeadWaiter puts a waiter for "k" in line whose process is gone:
// nobody subscribes to its channel.
func queueDeadWaiter(t *testing.T, srv *redistest.Server, mode string) {
	t.Helper()
	const owner, channel = "DEADOWNERDEADOWNERDEADOWNE", "baton:gone-process"
	if mode != "fair" {
		srv.Do(t, "RPUSH", "baton:{k}:wanted", owner+" 1 "+channel)
		srv.Do(t, "PEXPIRE", "baton:{k}:wanted", "60000")
		return
	}
	now := srv.Do(t, "TIME")
	secs, err := strconv.ParseInt(now.Elems[0].Str, 10, 64)
	require.NoError(t, err)
	deadline := strconv.FormatInt(secs*1000+60_000, 10) // its queue lease has not run out
	srv.Do(t, "HSET", "baton:{k}:waiters", owner, deadline+" 1 "+channel)
	srv.Do(t, "ZADD", "baton:{k}:queue", strconv.FormatInt(srv.Do(t, "INCR", "baton:{k}:seq").Int, 10), owner)
	for _, key := range []string{"baton:{k}:waiters", "baton:{k}:queue", "baton:{k}:seq"} {
		srv.Do(t, "PEXPIRE", key, "60000")
	}
}
