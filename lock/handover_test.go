package lock_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// awaitLock waits for a Lock sent by lockInBackground, failing the test
// if it failed or took more than 10 s.
func awaitLock(t *testing.T, got <-chan outcome) outcome {
	t.Helper()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Lock never returned")
		return outcome{}
	}
}

// waiterBehind has holder take key "k" on srv and waiter call Lock for
// it, and returns once the waiter's request stands (fast mode) or it is
// queued (fair mode): the holder's lease, when the waiter's Lock was
// called (a moment before its first ask), and what that Lock comes to.
func waiterBehind(t *testing.T, srv *redistest.Server, mode string, holder, waiter *lock.Locker) (held *lock.Lease, asked time.Time, got <-chan outcome) {
	t.Helper()
	held = mustLock(t, holder, "k")
	asked = time.Now()
	got = lockInBackground(context.Background(), waiter, "k")
	redistest.Eventually(t, func() bool { return waitersOf(t, srv, mode, "k") == 1 }, 5*time.Second, time.Millisecond)
	return held, asked, got
}

// waitersOf is how many waiters stand for key: requests in fast mode,
// queue entries in fair mode.
func waitersOf(t *testing.T, srv *redistest.Server, mode, key string) int64 {
	t.Helper()
	if mode == "fair" {
		return queueLen(t, srv, key)
	}
	return requestsOf(t, srv, key)
}

// bothModes runs test in a subtest for each mode.
func bothModes(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// requireStillWaiting fails the test if the Lock sent by
// lockInBackground returns within d: its lock is another owner's.
func requireStillWaiting(t *testing.T, got <-chan outcome, d time.Duration) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("Lock returned while the holder held the lock: %v, %v", r.lease, r.err)
	case <-time.After(d):
	}
}

// A waiter handed the lock holds its lease from the hand-off's message:
// the release sets its TTL and issues its token, and no confirmation
// follows. The lease counts its TTL from the waiter's first ask (fast
// mode) or queueing (fair mode), a moment before the release set the TTL,
// so it ends before the lock does in Redis, here some 300 ms before.
func TestAHandOffNeedsNoConfirmation(t *testing.T) { bothModes(t, testAHandOffNeedsNoConfirmation) }

func testAHandOffNeedsNoConfirmation(t *testing.T, mode string) {
	srv := redistest.Start(t)
	const ttl = time.Second
	holder := open(t, srv, modeOptions(mode, lock.WithTTL(ttl))...)
	waiter := open(t, srv, modeOptions(mode, lock.WithTTL(ttl))...)
	held, asked, got := waiterBehind(t, srv, mode, holder, waiter)
	time.Sleep(300*time.Millisecond - time.Since(asked))
	scripts := callsOf(t, srv, "evalsha")
	mustUnlock(t, held)
	r := awaitLock(t, got)
	require.Equal(t, int64(1), callsOf(t, srv, "evalsha")-scripts, "the release, and no confirmation")
	require.Greater(t, r.lease.Token(), held.Token())
	require.Equal(t, r.lease.Token(), mustInspect(t, waiter, "k").Token, "the token the release issued")

	// The lock's expiry in Redis, at the latest: the PTTL read after now.
	expires := time.Now().Add(time.Duration(srv.Do(t, "PTTL", "baton:{k}").Int) * time.Millisecond)
	<-r.lease.Done()
	ended := time.Now()
	t.Logf("the lease ended %v after the Lock call, %v after it returned, %v before the lock's expiry",
		ended.Sub(asked), ended.Sub(r.at), expires.Sub(ended))
	require.Less(t, ended.Sub(asked), ttl+100*time.Millisecond, "counted from the first ask")
	require.Less(t, ended.Sub(r.at), ttl-150*time.Millisecond, "not from the hand-off")
	require.Greater(t, expires.Sub(ended), 150*time.Millisecond, "the lease ends before the lock does")
}

// A hand-off whose message cannot stand for the lease alone is confirmed
// with an acquire, which sets the waiter's own TTL and issues its token
// anew: when the releaser set another TTL, when the wait used up more
// than half the waiter's TTL, and when the release is an earlier
// version's, whose message is the waiter's ID alone.
func TestAHandOffIsConfirmedWhereItsMessageCannotStandAlone(t *testing.T) {
	bothModes(t, testAHandOffIsConfirmedWhereItsMessageCannotStandAlone)
}

func testAHandOffIsConfirmedWhereItsMessageCannotStandAlone(t *testing.T, mode string) {
	for _, c := range []struct {
		name                  string
		holderTTL, waiterTTL  time.Duration
		hold                  time.Duration
		earlierVersionRelease bool
	}{
		{name: "another TTL", holderTTL: 5 * time.Second, waiterTTL: 3 * time.Second},
		{name: "a long wait", holderTTL: time.Second, waiterTTL: time.Second, hold: 600 * time.Millisecond},
		{name: "an earlier version's release", holderTTL: 3 * time.Second, waiterTTL: 3 * time.Second, earlierVersionRelease: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := redistest.Start(t)
			holder := open(t, srv, modeOptions(mode, lock.WithTTL(c.holderTTL))...)
			waiter := open(t, srv, modeOptions(mode, lock.WithTTL(c.waiterTTL))...)
			held, asked, got := waiterBehind(t, srv, mode, holder, waiter)
			time.Sleep(c.hold - time.Since(asked))
			scripts := callsOf(t, srv, "evalsha")
			if c.earlierVersionRelease {
				handOffAsAnEarlierVersion(t, srv, mode, "k")
			} else {
				mustUnlock(t, held)
			}
			r := awaitLock(t, got)
			confirmations := callsOf(t, srv, "evalsha") - scripts
			if !c.earlierVersionRelease {
				confirmations-- // the release
			}
			require.Equal(t, int64(1), confirmations)
			left := time.Duration(srv.Do(t, "PTTL", "baton:{k}").Int) * time.Millisecond
			require.Greater(t, left, c.waiterTTL-500*time.Millisecond, "the waiter's own TTL")
			require.LessOrEqual(t, left, c.waiterTTL)
			require.Equal(t, r.lease.Token(), mustInspect(t, waiter, "k").Token, "the confirmation's token")
			require.NoError(t, r.lease.Unlock(context.Background()))
		})
	}
}

// handOffAsAnEarlierVersion hands key's lock to the first waiter, as a
// release of an earlier version did: the waiter taken off the list or the
// queue, the lock set to its owner token for the hand-off window, and the
// waiter's ID alone published.
func handOffAsAnEarlierVersion(t *testing.T, srv *redistest.Server, mode, key string) {
	t.Helper()
	owner, id, channel := firstWaiter(t, srv, mode, key)
	if mode == "fair" {
		srv.Do(t, "ZREM", "baton:{"+key+"}:queue", owner)
		srv.Do(t, "HDEL", "baton:{"+key+"}:waiters", owner)
	} else {
		srv.Do(t, "LPOP", "baton:{"+key+"}:wanted")
	}
	srv.Do(t, "SET", "baton:{"+key+"}", owner, "PX", "500")
	srv.Do(t, "PUBLISH", channel, id)
}

// firstWaiter is the first waiter standing for key: its owner token, and
// where its hand-off reaches it.
func firstWaiter(t *testing.T, srv *redistest.Server, mode, key string) (owner, id, channel string) {
	t.Helper()
	if mode == "fair" {
		w := fairQueue(t, srv, key, 1)[0]
		return w.owner, w.id, w.channel
	}
	request := srv.Do(t, "LINDEX", "baton:{"+key+"}:wanted", "0").Str
	fields := strings.SplitN(request, " ", 3)
	require.Len(t, fields, 3, "a request %q", request)
	return fields[0], fields[1], fields[2]
}

// queuedWaiter is a fair queue's entry for a waiter: its owner token, and
// the waiter's ID and channel, where a hand-off reaches it.
type queuedWaiter struct{ owner, id, channel string }

// fairQueue reads the first n entries of key's fair queue, in order.
func fairQueue(t *testing.T, srv *redistest.Server, key string, n int) []queuedWaiter {
	t.Helper()
	var ws []queuedWaiter
	for _, owner := range srv.Do(t, "ZRANGE", "baton:{"+key+"}:queue", "0", strconv.Itoa(n-1)).Elems {
		entry := srv.Do(t, "HGET", "baton:{"+key+"}:waiters", owner.Str).Str
		fields := strings.SplitN(entry, " ", 3) // deadline, ID, channel
		require.Len(t, fields, 3, "a queue entry %q", entry)
		ws = append(ws, queuedWaiter{owner.Str, fields[1], fields[2]})
	}
	require.Len(t, ws, n, "the queue's entries")
	return ws
}

// A message that names a waiter but does not read as a hand-off (garbled,
// or a token of 0) only wakes it: the waiter looks, finds the lock still
// held, and waits on for the release, which hands it over.
func TestAWaiterTakesNoLeaseFromAGarbledMessage(t *testing.T) {
	bothModes(t, testAWaiterTakesNoLeaseFromAGarbledMessage)
}

func testAWaiterTakesNoLeaseFromAGarbledMessage(t *testing.T, mode string) {
	srv := redistest.Start(t)
	holder := open(t, srv, modeOptions(mode)...)
	waiter := open(t, srv, modeOptions(mode)...)
	held, _, got := waiterBehind(t, srv, mode, holder, waiter)
	_, id, channel := firstWaiter(t, srv, mode, "k")
	for _, text := range []string{"garbled", "0 10000", "-5 10000", "18446744073709551616 10000", "7"} {
		srv.Do(t, "PUBLISH", channel, id+" "+text)
	}
	requireStillWaiting(t, got, 200*time.Millisecond)
	assert.Equal(t, held.Token(), mustInspect(t, holder, "k").Token)
	mustUnlock(t, held)
	r := awaitLock(t, got)
	require.NoError(t, r.lease.Unlock(context.Background()))
}

// A client allowed to publish on every channel but to read none of
// baton's keys can find a process's channel (PUBSUB CHANNELS) and guess
// its waiters' small IDs. Its messages, however well formed, carry no
// owner token of a waiting claim, and only wake the waiter to look: no
// second holder, no token that is not the stored one.
func TestAForgedHandOffMessageGrantsNoLease(t *testing.T) {
	bothModes(t, testAForgedHandOffMessageGrantsNoLease)
}

func testAForgedHandOffMessageGrantsNoLease(t *testing.T, mode string) {
	srv := redistest.Start(t)
	holder := open(t, srv, modeOptions(mode)...)
	waiter := open(t, srv, modeOptions(mode)...)
	held, _, got := waiterBehind(t, srv, mode, holder, waiter)

	srv.Do(t, "ACL", "SETUSER", "publisher", "on", ">pw", "resetkeys", "~unrelated:*", "&*", "+publish", "+pubsub|channels")
	publisher, err := conn.Dial(context.Background(), "redis://publisher:pw@"+srv.Addr)
	require.NoError(t, err)
	defer publisher.Close()
	_, err = publisher.Do(context.Background(), "GET", "baton:{k}")
	require.ErrorIs(t, err, resp.NoPerm, "the publisher cannot read the lock's keys")
	channels, err := publisher.Do(context.Background(), "PUBSUB", "CHANNELS", "baton:wake:*")
	require.NoError(t, err)
	require.NotEmpty(t, channels.Elems)
	for _, ch := range channels.Elems {
		for id := 1; id <= 32; id++ {
			for _, text := range []string{" 1 10000", " 1 10000 GUESSEDOWNERXXXXXXXXXXXXXX"} {
				_, err := publisher.Do(context.Background(), "PUBLISH", ch.Str, strconv.Itoa(id)+text)
				require.NoError(t, err)
			}
		}
	}
	requireStillWaiting(t, got, 300*time.Millisecond)
	mustUnlock(t, held)
	r := awaitLock(t, got)
	require.Equal(t, mustInspect(t, waiter, "k").Token, r.lease.Token())
	require.NoError(t, r.lease.Unlock(context.Background()))
}

// A lease from a hand-off's message may start with half its TTL gone,
// since it counts from the first ask: the watchdog extends it first when
// two thirds of a TTL are left, as it does a lease from an acquire, so
// that a server that stalls for a quarter of the TTL around the
// extension loses it no lease.
func TestAWatchedLeaseFromAHandOffRidesOutAShortStall(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 900 * time.Millisecond
	holder := open(t, srv, lock.WithTTL(ttl))
	waiter := open(t, srv, lock.WithTTL(ttl), lock.WithAutoExtend())
	held, asked, got := waiterBehind(t, srv, "fast", holder, waiter)
	time.Sleep(420*time.Millisecond - time.Since(asked))
	mustUnlock(t, held)
	r := awaitLock(t, got)
	stall := ttl/4 + 30*time.Millisecond
	time.Sleep(time.Until(r.at.Add(ttl/3 - 30*time.Millisecond)))
	srv.Pause(t, stall)
	time.Sleep(ttl)
	select {
	case <-r.lease.Done():
		t.Fatalf("the lease was lost to a %v stall, %v after Lock returned", stall, time.Since(r.at).Round(time.Millisecond))
	default:
	}
	require.NoError(t, r.lease.Unlock(context.Background()))
}

// The benchmark baseline's scripts are the lock's own, with the
// arguments a Locker sends: the release deletes a lock nobody asked for
// and hands on one that somebody did.
func TestTheRawScriptsAreTheLocksOwn(t *testing.T) {
	srv := redistest.Start(t)
	sub := redistest.DialRaw(t, srv.Addr)
	sub.RoundTrip(t, resp.AppendCommand(nil, "SUBSCRIBE", "raw-asker"), 1)
	for _, c := range []struct {
		request string
		want    int64
	}{{"", 1}, {"ASKERXXXXXXXXXXXXXXXXXXXXX 7 raw-asker", 2}} {
		require.Positive(t, srv.Do(t, lock.RawAcquire("baton:{raw}", "owner")...).Int, "a token")
		if c.request != "" {
			srv.Do(t, "RPUSH", "baton:{raw}:wanted", c.request)
		}
		require.Equal(t, c.want, srv.Do(t, lock.RawRelease("baton:{raw}", "owner")...).Int)
		srv.Do(t, "DEL", "baton:{raw}")
	}
}

// A claim takes a lease from its first hand-off's message at most: once
// one with its owner token came, a later one is taken for a replay, by a
// client that saw the first on the channel, and only wakes the waiter to
// look. Here the first names another TTL, so the waiter confirms, finds
// the lock still the holder's, and waits on; the second, well formed,
// makes no second holder.
func TestAClaimTakesALeaseFromOneHandOffMessageAtMost(t *testing.T) {
	bothModes(t, testAClaimTakesALeaseFromOneHandOffMessageAtMost)
}

func testAClaimTakesALeaseFromOneHandOffMessageAtMost(t *testing.T, mode string) {
	srv := redistest.Start(t)
	holder := open(t, srv, modeOptions(mode)...)
	waiter := open(t, srv, modeOptions(mode)...)
	held, _, got := waiterBehind(t, srv, mode, holder, waiter)
	owner, id, channel := firstWaiter(t, srv, mode, "k")
	srv.Do(t, "PUBLISH", channel, id+" 5 1 "+owner)
	redistest.Eventually(t, func() bool { return waitersOf(t, srv, mode, "k") == 1 }, 5*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond) // the waiter has looked, and waits on
	srv.Do(t, "PUBLISH", channel, id+" 5 10000 "+owner)
	requireStillWaiting(t, got, 300*time.Millisecond)
	mustUnlock(t, held)
	r := awaitLock(t, got)
	require.Equal(t, mustInspect(t, waiter, "k").Token, r.lease.Token())
	require.NoError(t, r.lease.Unlock(context.Background()))
}

// A client that may subscribe to and publish on every channel, but read
// no baton key, sees a hand-off's message on the waiter's channel and
// publishes a copy at once, with the waiter's own TTL and token 1. Here
// the waiter's subscriber is slow to read, so both messages come in one
// read, before the waiter takes the release's: the waiter keeps the
// first with its owner token, the release's. That one names the
// releaser's TTL (1 s), not the waiter's (10 s), so the waiter confirms.
func TestAReplayRightBehindAHandOffDoesNotReplaceIt(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv, lock.WithTTL(time.Second))
	var stalled atomic.Bool
	waiter := open(t, srv, lock.WithTTL(10*time.Second), stalledSubscriber(&stalled, 300*time.Millisecond))
	other := open(t, srv, lock.WithTTL(10*time.Second))
	held, _, got := waiterBehind(t, srv, "fast", holder, waiter)
	_, _, channel := firstWaiter(t, srv, "fast", "k") // the spy finds it with PUBSUB CHANNELS

	srv.Do(t, "ACL", "SETUSER", "spy", "on", ">pw", "resetkeys", "~unrelated:*", "&*", "+publish", "+subscribe", "+auth")
	spy := redistest.DialRaw(t, srv.Addr)
	spy.Do(t, resp.AppendCommand(nil, "AUTH", "spy", "pw"), 1)
	spy.Do(t, resp.AppendCommand(nil, "SUBSCRIBE", channel), 1)
	publisher, err := conn.Dial(context.Background(), "redis://spy:pw@"+srv.Addr)
	require.NoError(t, err)
	defer publisher.Close()
	_, err = publisher.Do(context.Background(), "GET", "baton:{k}")
	require.ErrorIs(t, err, resp.NoPerm, "the spy cannot read the lock's keys")

	// The waiter's subscriber is slow to read for a moment.
	stalled.Store(true)
	srv.Do(t, "PUBLISH", channel, "x")
	time.Sleep(20 * time.Millisecond)
	stalled.Store(false)

	mustUnlock(t, held) // hands off: "<id> <token> 1000 <owner>"
	var real string
	for real == "" || real == "x" {
		m := spy.Do(t, nil, 1)
		require.Len(t, m.Elems, 3)
		real = m.Elems[2].Str
	}
	f := strings.Fields(real)
	require.Len(t, f, 4, real)
	_, err = publisher.Do(context.Background(), "PUBLISH", channel, f[0]+" 1 10000 "+f[3])
	require.NoError(t, err)

	r := awaitLock(t, got)
	// The lock's expiry as Redis keeps it, in Unix milliseconds: a PTTL
	// read after a local now would be short of it by the round trip, as
	// much as a confirmation's lease is short of the lock.
	expires := time.UnixMilli(srv.Do(t, "PEXPIRETIME", "baton:{k}").Int)
	stored := mustInspect(t, waiter, "k").Token
	t.Logf("real message %q; lease token %d, stored %d; the lease ends %v before the lock in Redis",
		real, r.lease.Token(), stored, expires.Sub(lock.Deadline(r.lease)))
	assert.Equal(t, stored, r.lease.Token(), "the token the release issued")
	assert.False(t, lock.Deadline(r.lease).After(expires), "the lease ends after the lock does in Redis")

	time.Sleep(time.Until(expires) + 50*time.Millisecond)
	second, err := other.TryLock(context.Background(), "k")
	if err == nil {
		select {
		case <-r.lease.Done():
		default:
			t.Errorf("two holders: the waiter's lease (token %d) is open, and another took the lock (token %d)", r.lease.Token(), second.Token())
		}
		_ = second.Unlock(context.Background())
	}
	_ = r.lease.Unlock(context.Background())
}
