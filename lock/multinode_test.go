package lock_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// clusterURL is the address lock.Open takes for c.
func clusterURL(c *redistest.Cluster) string {
	return "redis+cluster://" + strings.Join(c.Seeds(), ",")
}

// clusterModes are the modes a cluster test runs in: each lock mode with
// shard channels, where the nodes have SPUBLISH, and with plain ones, the
// fallback for nodes without.
var clusterModes = []string{"fast", "fair", "fast+plain", "fair+plain"}

// clusterModeOptions are the options of one of clusterModes.
func clusterModeOptions(mode string, opts ...lock.Option) []lock.Option {
	lockMode, plain := strings.CutSuffix(mode, "+plain")
	if plain {
		opts = append(opts, lock.WithPlainChannels())
	}
	return modeOptions(lockMode, opts...)
}

// openOnCluster opens n Lockers on c, each with a cluster client and
// subscribers of its own, as n processes would; they close at the test's
// end.
func openOnCluster(t *testing.T, c *redistest.Cluster, n int, opts ...lock.Option) []*lock.Locker {
	t.Helper()
	lockers := make([]*lock.Locker, n)
	for i := range lockers {
		l, err := lock.Open(context.Background(), clusterURL(c), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		lockers[i] = l
	}
	return lockers
}

// keysOnEveryPrimary returns n keys per primary of c, whose locks live on
// every primary in turn.
func keysOnEveryPrimary(t *testing.T, c *redistest.Cluster, primaries, n int) []string {
	t.Helper()
	per := map[string][]string{}
	var keys []string
	for i := 0; len(keys) < primaries*n; i++ {
		key := "k" + strconv.Itoa(i)
		owner := c.Primary(t, cluster.Slot("baton:{"+key+"}")).Addr
		if len(per[owner]) < n {
			per[owner] = append(per[owner], key)
			keys = append(keys, key)
		}
		require.Less(t, i, 10000, "no key found for some primary")
	}
	require.Len(t, per, primaries)
	return keys
}

// contend has every Locker's goroutines take the keys' locks in turn, each
// at least rounds times, and add one to a counter kept under each lock,
// read and written through the cluster client. An atomic flag per key
// catches two holders at once, and every count must come out exact.
// during runs on the test's goroutine while the workers run, and the
// workers go on until it has returned, however fast the machine: the
// contention is sized by the event it must overlap, not by a count.
// contend returns how many increments were done when during returned.
func contend(t *testing.T, cc *cluster.Client, lockers []*lock.Locker, keys []string, workers, rounds int, during func()) (doneDuring int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held := make(map[string]*atomic.Bool, len(keys))
	counted := make(map[string]*atomic.Int64, len(keys)) // increments done per key
	for _, k := range keys {
		held[k], counted[k] = new(atomic.Bool), new(atomic.Int64)
		_, err := cc.Do(ctx, "baton:{"+k+"}", "DEL", "count:{"+k+"}")
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var done, longest atomic.Int64 // increments; the longest Lock, in ns
	var over atomic.Bool           // during has returned
	over.Store(during == nil)
	errs := make(chan error, len(lockers)*workers)
	for _, l := range lockers {
		for range workers {
			wg.Go(func() {
				for r := 0; r < rounds || !over.Load(); r++ {
					key := keys[r%len(keys)]
					waited, err := incrementUnder(ctx, cc, l, key, held[key])
					if err != nil {
						errs <- err
						return
					}
					counted[key].Add(1)
					done.Add(1)
					for old := longest.Load(); int64(waited) > old && !longest.CompareAndSwap(old, int64(waited)); old = longest.Load() {
					}
				}
			})
		}
	}
	if during != nil {
		during()
		doneDuring = done.Load()
		over.Store(true)
	}
	wg.Wait()
	t.Logf("the longest Lock took %v", time.Duration(longest.Load()).Round(time.Millisecond))
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, k := range keys {
		v, err := cc.Do(ctx, "baton:{"+k+"}", "GET", "count:{"+k+"}")
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(counted[k].Load(), 10), v.Str, "count of %s", k)
	}
	return doneDuring
}

// incrementUnder takes key's lock and adds one to its counter with a GET
// and a SET, which only mutual exclusion keeps from losing increments. It
// returns how long the Lock took.
func incrementUnder(ctx context.Context, cc *cluster.Client, l *lock.Locker, key string, held *atomic.Bool) (time.Duration, error) {
	start := time.Now()
	ls, err := l.Lock(ctx, key)
	waited := time.Since(start)
	if err != nil {
		return waited, err
	}
	if !held.CompareAndSwap(false, true) {
		return waited, fmt.Errorf("two holders of %s", key)
	}
	counter := "count:{" + key + "}"
	v, err := cc.Do(ctx, counter, "GET", counter)
	if err == nil {
		n, _ := strconv.Atoi(v.Str)
		_, err = cc.Do(ctx, counter, "SET", counter, strconv.Itoa(n+1))
	}
	held.Store(false)
	if err != nil {
		return waited, err
	}
	return waited, ls.Unlock(ctx)
}

// TestLocksOnEveryPrimaryOfACluster opens Lockers on a cluster URL and
// runs contended increments on keys whose locks live on each of three
// primaries, in both modes, with shard channels and plain ones: no two
// holders at once, no increment lost.
func TestLocksOnEveryPrimaryOfACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	cc, err := cluster.New(ctx, c.Seeds())
	require.NoError(t, err)
	defer cc.Close()
	keys := keysOnEveryPrimary(t, c, 3, 2)
	for _, mode := range clusterModes {
		t.Run(mode, func(t *testing.T) {
			lockers := openOnCluster(t, c, 3, clusterModeOptions(mode)...)
			contend(t, cc, lockers, keys, 4, 60, nil)
		})
	}
}

// TestLocksFollowASlotMigratedDuringContention moves the slot of a
// contended lock from node to node while three Lockers per mode take it
// in turns (CLUSTER SETSLOT MIGRATING and IMPORTING, MIGRATE, SETSLOT
// NODE): its commands follow ASK, TRYAGAIN and MOVED, its waiters listen
// on each new node, and no two holders overlap, no increment is lost.
func TestLocksFollowASlotMigratedDuringContention(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	cc, err := cluster.New(ctx, c.Seeds())
	require.NoError(t, err)
	defer cc.Close()
	key := "moving"
	slot := cluster.Slot("baton:{" + key + "}")
	for _, mode := range clusterModes {
		t.Run(mode, func(t *testing.T) {
			lockers := openOnCluster(t, c, 3, clusterModeOptions(mode)...)
			const workers, rounds = 3, 20
			doneDuring := contend(t, cc, lockers, []string{key}, workers, rounds, func() {
				for _, to := range c.Nodes() {
					time.Sleep(100 * time.Millisecond)
					if to.Addr != c.Primary(t, slot).Addr {
						c.MigrateSlot(t, slot, to)
					}
				}
			})
			t.Logf("%d increments done when the last migration ended", doneDuring)
		})
	}
}

// TestFairWaitersAcquireInArrivalOrderOnACluster is the FIFO test on a
// Redis Cluster of three primaries: directed hand-offs reach waiters of
// four Lockers, each with its own cluster client and subscribers, in
// order.
func TestFairWaitersAcquireInArrivalOrderOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	srv := c.Primary(t, cluster.Slot("baton:{line}"))
	requireArrivalOrder(t, openOnCluster(t, c, 4, lock.WithFair()), func(args ...string) int64 { return srv.Do(t, args...).Int })
}

// callsOf is how many times srv has run cmd (its lower-case name),
// scripts' calls included.
func callsOf(t *testing.T, srv *redistest.Server, cmd string) int64 {
	t.Helper()
	return commandStats(t, srv)[cmd].Calls
}

// TestHandOffsOnAClusterStayOnTheLocksNode: on a cluster of Redis 7
// nodes, a waiter listens for its hand-off on a shard channel in the
// lock's slot, and every message of a hand-off, and of a request to the
// holder, is an SPUBLISH on the lock's node: no PUBLISH, which the
// cluster would send to every node, runs anywhere. With plain channels
// (the fallback for nodes without SPUBLISH) the hand-off works by PUBLISH.
func TestHandOffsOnAClusterStayOnTheLocksNode(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	for _, mode := range clusterModes {
		t.Run(mode, func(t *testing.T) {
			plain := strings.HasSuffix(mode, "+plain")
			key := "handed-" + mode
			owner := c.Primary(t, cluster.Slot("baton:{"+key+"}"))
			published := map[*redistest.Server]int64{}
			for _, n := range c.Nodes() {
				published[n] = callsOf(t, n, "publish")
			}
			spublished := callsOf(t, owner, "spublish")
			lockers := openOnCluster(t, c, 2, clusterModeOptions(mode)...)
			holder, waiter := lockers[0], lockers[1]

			ls, err := holder.Lock(ctx, key)
			require.NoError(t, err)
			got := lockAndUnlock(waiter, key)
			redistest.Eventually(t, func() bool {
				info, err := holder.Inspect(ctx, key)
				return err == nil && info.Wanted
			}, 5*time.Second, time.Millisecond)
			channels := owner.Do(t, "PUBSUB", "SHARDCHANNELS", "baton:{"+key+"}:to:*")
			if plain {
				require.Empty(t, channels.Elems, "plain channels only")
			} else {
				require.Len(t, channels.Elems, 1, "the waiter listens on a shard channel of the lock's")
			}
			// A write-back that keeps the lock hands it to the waiter
			// that asked, in both modes.
			held, err := ls.Commit(ctx, lock.Write{Key: "baton:{" + key + "}:state", Value: "v", TTL: time.Minute})
			require.NoError(t, err)
			require.False(t, held)
			require.NoError(t, <-got)

			if plain {
				require.Equal(t, spublished, callsOf(t, owner, "spublish"))
				require.Greater(t, callsOf(t, owner, "publish"), published[owner], "the fallback publishes")
				return
			}
			require.Greater(t, callsOf(t, owner, "spublish"), spublished)
			for _, n := range c.Nodes() {
				require.Equal(t, published[n], callsOf(t, n, "publish"), "no PUBLISH on %s", n.Addr)
			}
		})
	}
}

// TestANodesOwnAddressSaysToUseAClusterURL: a Locker opened on one
// node's address of a cluster fails on keys the node does not serve with
// the server's MOVED, and says how to open it instead; one opened on a
// cluster URL that names a server without cluster support fails to open.
func TestANodesOwnAddressSaysToUseAClusterURL(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	ctx := context.Background()
	node := c.Nodes()[0]
	l, err := lock.Open(ctx, node.Addr)
	require.NoError(t, err)
	defer l.Close()
	key := keyOn(t, c, c.Nodes()[1], "elsewhere")
	_, err = l.Lock(ctx, key)
	require.ErrorIs(t, err, resp.Moved)
	require.ErrorContains(t, err, "redis+cluster://")

	plain := redistest.Start(t)
	_, err = lock.Open(ctx, "redis+cluster://"+plain.Addr)
	var refused *resp.Error
	require.ErrorAs(t, err, &refused, "the server's own refusal of CLUSTER")
}

// TestClusterOptionsReachTheClusterClient: a Locker whose cluster client
// may send a batch only once fails on a lock whose slot moved since it
// last looked, with the cluster's ErrTooManyRetries; a default one follows
// the MOVED.
func TestClusterOptionsReachTheClusterClient(t *testing.T) {
	c := redistest.StartCluster(t, 2, 0)
	ctx := context.Background()
	key := "moved"
	slot := cluster.Slot("baton:{" + key + "}")
	once, err := lock.Open(ctx, clusterURL(c), lock.WithClusterOptions(cluster.WithMaxRetries(0)))
	require.NoError(t, err)
	defer once.Close()
	following := openOnCluster(t, c, 1)[0]
	for _, l := range []*lock.Locker{once, following} {
		ls, err := l.Lock(ctx, key)
		require.NoError(t, err)
		require.NoError(t, ls.Unlock(ctx))
	}

	to := c.Nodes()[0]
	if to == c.Primary(t, slot) {
		to = c.Nodes()[1]
	}
	c.MigrateSlot(t, slot, to)
	_, err = once.Lock(ctx, key)
	require.ErrorIs(t, err, cluster.ErrTooManyRetries)
	require.ErrorIs(t, err, resp.Moved)
	ls, err := following.Lock(ctx, key)
	require.NoError(t, err)
	require.NoError(t, ls.Unlock(ctx))
}

// TestKeysWithBracesGoStraightToTheirNode: a lock's keys hash by the tag
// of <prefix>{key}, not by the key's own braces, so a Locker on a cluster
// must route by the former. Keys whose own tag differs, taken and handed
// over in both modes, then taken again, never meet a MOVED after their
// first round.
func TestKeysWithBracesGoStraightToTheirNode(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	keys := []string{"a{b}c", "{x}y", "m{n}", "z{w}"}
	for _, key := range keys {
		require.NotEqual(t, cluster.Slot(key), cluster.Slot("baton:{"+key+"}"), "a key whose own slot differs")
	}
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode, func(t *testing.T) {
			var moved atomic.Int64
			tap := func(dir conn.Direction, p []byte) {
				if dir == conn.Read && bytes.Contains(p, []byte("-MOVED")) {
					moved.Add(1)
				}
			}
			opts := modeOptions(mode, lock.WithConnOptions(conn.WithTap(tap)))
			lockers := openOnCluster(t, c, 2, opts...)
			holder, waiter := lockers[0], lockers[1]
			round := func(key string) {
				ls, err := holder.Lock(ctx, key)
				require.NoError(t, err, key)
				got := lockAndUnlock(waiter, key)
				redistest.Eventually(t, func() bool {
					info, err := holder.Inspect(ctx, key)
					return err == nil && info.Wanted
				}, 5*time.Second, time.Millisecond)
				require.NoError(t, ls.Unlock(ctx), key)
				require.NoError(t, <-got, key)
			}
			for _, key := range keys {
				round(key)
			}
			before := moved.Load()
			for _, key := range keys {
				round(key)
			}
			require.Equal(t, before, moved.Load(), "a MOVED after the first round")
		})
	}
}

// TestFastWaiterThatGivesUpHandsOnOnACluster is
// TestFastWaiterThatGivesUpHandsOnALockHandedToIt on a Redis Cluster, with
// shard channels and plain ones: the waiter that gives up tells the one
// behind it with the Locker's own publish command, so that the waiter
// behind gets the lock at once rather than at a look after the hand-off
// window.
func TestFastWaiterThatGivesUpHandsOnOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	cc, err := cluster.New(ctx, c.Seeds())
	require.NoError(t, err)
	defer cc.Close()
	for _, mode := range []string{"fast", "fast+plain"} {
		t.Run(mode, func(t *testing.T) {
			key := "gives-up-" + mode
			name := "baton:{" + key + "}"
			requests := func() bool {
				v, err := cc.Do(ctx, name, "LLEN", name+":wanted")
				return err == nil && v.Int == 2
			}
			lockers := openOnCluster(t, c, 3, clusterModeOptions(mode)...)
			held := mustLock(t, lockers[0], key)
			quitCtx, cancel := context.WithCancel(ctx)
			quit := make(chan error, 1)
			go func() {
				_, err := lockers[1].Lock(quitCtx, key)
				quit <- err
			}()
			redistest.Eventually(t, func() bool {
				v, err := cc.Do(ctx, name, "LLEN", name+":wanted")
				return err == nil && v.Int == 1
			}, 5*time.Second, time.Millisecond)
			stayed := make(chan acquired, 1)
			go func() {
				ls, err := lockers[2].Lock(ctx, key)
				assert.NoError(t, err)
				stayed <- acquired{ls, time.Now()}
			}()
			redistest.Eventually(t, requests, 5*time.Second, time.Millisecond)

			// Hand the lock to the quitter, as a release would, and let
			// it go before it confirms.
			first, err := cc.Do(ctx, name, "LPOP", name+":wanted")
			require.NoError(t, err)
			_, err = cc.Do(ctx, name, "SET", name, strings.Fields(first.Str)[0], "PX", "10000")
			require.NoError(t, err)
			gaveUp := time.Now()
			cancel()
			require.ErrorIs(t, <-quit, context.Canceled)
			select {
			case got := <-stayed:
				require.NotNil(t, got.ls)
				t.Logf("the waiter behind got the lock %v after the other gave up", got.at.Sub(gaveUp))
				require.Less(t, got.at.Sub(gaveUp), 250*time.Millisecond, "handed on, not found at a look after the hand-off window")
				mustUnlock(t, got.ls)
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter behind never got the lock")
			}
			require.ErrorIs(t, held.Unlock(ctx), lock.ErrNotHeld)
		})
	}
}
