package conn_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

// portOf is the port of the server c's connection reaches, or "" if the
// call failed (a connection broken by a failover, say).
func portOf(c *conn.Client) string {
	v, err := c.Do(context.Background(), "CONFIG", "GET", "port")
	if err != nil || len(v.Elems) != 2 {
		return ""
	}
	return v.Elems[1].Str
}

// listening waits until some sentinel has a client subscribed to the
// announcements of a new primary: the client's watcher.
func listening(t *testing.T, s *redistest.Sentinels) {
	t.Helper()
	redistest.Eventually(t, func() bool {
		for _, sn := range s.Sentinels.Sentinels {
			// Sentinels have no PUBSUB; their own links to each other
			// subscribe to nothing.
			if v, err := sn.Do("CLIENT", "LIST"); err == nil && anySubscribed(v.Str) {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "no client listens to the sentinels")
}

// anySubscribed reports whether a CLIENT LIST reply shows a client
// subscribed to some channel.
func anySubscribed(clients string) bool {
	for _, client := range strings.Split(clients, "\n") {
		if strings.Contains(client, " sub=") && !strings.Contains(client, " sub=0 ") {
			return true
		}
	}
	return false
}

// A primary failed over while alive keeps saying it is one, and keeps its
// clients, for seconds; a Client through sentinels leaves it when the
// sentinels report the new primary, not when the old one turns into a
// replica. The sentinel that leads the failover names the old primary
// until every other replica follows the new one (a sync each, seconds
// under load), but announces the promotion as soon as it sees it; the
// others switch about then. So the Client leaves within about a second
// and a half of SENTINEL FAILOVER whichever sentinel it listens to: the
// leader (to which the failover was sent), another, or the next one
// after its own died; with the sentinels' own settings as with the
// tests' shorter ones.
func TestAClientLeavesAPrimaryFailedOverAliveAtThePromotion(t *testing.T) {
	defaults := []string{"sentinel down-after-milliseconds mymaster 30000", "sentinel failover-timeout mymaster 180000"}
	for _, tc := range []struct {
		name      string
		asked     int // the sentinel sent SENTINEL FAILOVER, which leads it
		firstDies bool
		config    []string
	}{
		{name: "it listens to the leader", asked: 0},
		{name: "it listens to another", asked: 1},
		{name: "the one it listens to dies", asked: 1, firstDies: true},
		{name: "default settings", asked: 0, config: defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := redistest.StartSentinels(t, 2, 3, tc.config...)
			c, err := conn.NewClient(s.URL())
			require.NoError(t, err)
			defer c.Close()
			old := s.Primary(t)
			_, oldPort, _ := net.SplitHostPort(old.Addr)
			require.Equal(t, oldPort, portOf(c))
			listening(t, s)

			if tc.firstDies {
				s.Sentinels.Sentinels[0].Stop() // the one the client listens to
			}
			_, err = s.Sentinels.Sentinels[tc.asked].Do("SENTINEL", "FAILOVER", "mymaster")
			require.NoError(t, err)
			began := time.Now()
			redistest.Eventually(t, func() bool { p := portOf(c); return p != "" && p != oldPort },
				30*time.Second, 5*time.Millisecond, "the client stayed on the old primary")
			left := time.Since(began)
			oldRole := old.Do(t, "ROLE").Elems[0].Str
			require.Equal(t, "master", role(t, c), "the client reached the new primary")
			// The old primary still says it is one: without the
			// sentinels' report, the client would still be there.
			require.Equal(t, "master", oldRole, "the old primary had turned into a replica first")
			t.Logf("the client left the old primary %v after SENTINEL FAILOVER", left.Round(time.Millisecond))
			// The leader sees the promotion at its next look at the
			// replica, a second at most after it sent SLAVEOF NO ONE;
			// its switch comes a second later at the soonest.
			require.Less(t, left, 1800*time.Millisecond, "the client waited for the leader's switch")
		})
	}
}

// bulk is s as a RESP bulk string.
func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

// announcement is a +switch-master message whose payload is payload.
func announcement(payload string) string {
	return ">3\r\n" + bulk("message") + bulk("+switch-master") + bulk(payload)
}

// promotedAnnouncement is a +promoted-slave message whose payload is
// payload.
func promotedAnnouncement(payload string) string {
	return ">3\r\n" + bulk("message") + bulk("+promoted-slave") + bulk(payload)
}

// fakeSentinel is a scripted sentinel whose SENTINEL MASTER reply is
// master's fields and values, and that sends announce's frames once its
// announcements are subscribed to (nil: it refuses SUBSCRIBE, as a
// sentinel behind a proxy that allows no pub/sub might); answered counts
// the SENTINEL questions it answered.
func fakeSentinel(t *testing.T, master []string, announce []string, answered *atomic.Int64) *redistest.Fake {
	return changingSentinel(t, func() []string { return master }, announce, answered)
}

// changingSentinel is fakeSentinel, whose SENTINEL MASTER reply is what
// master returns when asked.
func changingSentinel(t *testing.T, master func() []string, announce []string, answered *atomic.Int64) *redistest.Fake {
	return redistest.NewFake(t, func(s *redistest.Session) {
		for {
			cmd, err := s.ReadCommand()
			if err != nil {
				return
			}
			switch strings.ToUpper(cmd[0]) {
			case "HELLO":
				_ = s.Send("%1\r\n" + bulk("proto") + ":3\r\n")
			case "SENTINEL":
				fields := master()
				reply := fmt.Sprintf("*%d\r\n", len(fields))
				for _, f := range fields {
					reply += bulk(f)
				}
				_ = s.Send(reply)
				answered.Add(1)
			case "SUBSCRIBE":
				if announce == nil {
					_ = s.Send("-ERR unknown command\r\n")
					continue
				}
				_ = s.Send(">3\r\n" + bulk("subscribe") + bulk("+switch-master") + ":1\r\n")
			case "PING":
				_ = s.Send("+PONG\r\n")
				for _, frame := range announce {
					_ = s.Send(frame)
				}
			default:
				_ = s.Send("-ERR unknown command\r\n")
			}
		}
	})
}

// Announcements that are malformed, for another master, or that a
// question to the sentinel does not bear out leave a Client where it is.
func TestAnnouncementsTheSentinelDoesNotBearOutChangeNothing(t *testing.T) {
	server := redistest.Start(t)
	host, port, _ := net.SplitHostPort(server.Addr)
	var answered atomic.Int64
	sentinel := fakeSentinel(t, []string{"name", "mymaster", "ip", host, "port", port, "config-epoch", "0"}, []string{
		">2\r\n" + bulk("message") + bulk("+switch-master"),
		">3\r\n" + bulk("message") + bulk("+switch-master") + ":1\r\n",
		announcement(""),
		announcement("othermaster 127.0.0.1 1 127.0.0.1 2"),
		announcement("mymaster"),
		announcement("mymaster " + host + " " + port + " 127.0.0.1 1"), // no newer epoch: not borne out
		promotedAnnouncement("slave 127.0.0.1:1 127.0.0.1 1 @ othermaster " + host + " " + port),
		promotedAnnouncement("slave 127.0.0.1:1 127.0.0.1 99999 @ mymaster " + host + " " + port),
		promotedAnnouncement("slave 127.0.0.1:1 127.0.0.1 1 mymaster " + host + " " + port),
		promotedAnnouncement("master mymaster 127.0.0.1 1"),
		promotedAnnouncement(""),
	}, &answered)
	c, err := conn.NewClient("redis+sentinel://" + sentinel.Addr + "/mymaster")
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	id, err := c.Do(ctx, "CLIENT", "ID")
	require.NoError(t, err)
	// The dial's question, the watcher's first, and one for the
	// announcement that named mymaster with an address.
	redistest.Eventually(t, func() bool { return answered.Load() >= 3 }, 10*time.Second, 5*time.Millisecond,
		"the watcher did not ask the sentinel")
	again, err := c.Do(ctx, "CLIENT", "ID")
	require.NoError(t, err)
	require.Equal(t, id.Int, again.Int, "the client changed connections")
}

// A promotion announced of a node that says it is no primary (a sentinel
// that lies, or a replica demoted again) is dropped at the first dial
// that finds so: the Client goes back to the primary the sentinels name,
// rather than wait for them to name another.
func TestAPromotionTheNodeDoesNotBearOutIsDropped(t *testing.T) {
	primary := redistest.Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica := redistest.Start(t, redistest.WithConfig("replicaof "+host+" "+port))
	rhost, rport, _ := net.SplitHostPort(replica.Addr)
	var answered atomic.Int64
	sentinel := fakeSentinel(t, []string{"name", "mymaster", "ip", host, "port", port, "config-epoch", "1"}, []string{
		promotedAnnouncement(fmt.Sprintf("slave %s:%s %s %s @ mymaster %s %s", rhost, rport, rhost, rport, host, port)),
	}, &answered)
	c, err := conn.NewClient("redis+sentinel://" + sentinel.Addr + "/mymaster")
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	// The announcement breaks the connection to the primary it names
	// replaced; the dial to the "promoted" replica finds a replica. The
	// sentinel announces as soon as it is subscribed to, which may be
	// before the first call has its reply: that call then fails as
	// broken, the announcement having come first.
	first, err := c.Do(ctx, "CLIENT", "ID")
	if err != nil {
		require.ErrorIs(t, err, conn.ErrBroken)
		first.Int = -1 // no ID yet: any connection that answers is after the break
	}
	redistest.Eventually(t, func() bool {
		call, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		id, err := c.Do(call, "CLIENT", "ID")
		return err == nil && id.Int != first.Int
	}, 10*time.Second, 5*time.Millisecond, "the client kept its connection through the announcement, or never came back")
	require.Equal(t, port, portOf(c), "the client is not back on the primary")
	require.Equal(t, "master", role(t, c))
}

// A promoted node that cannot be reached (everyone redials it at once
// after a failover) is waited for, not given up at the first refusal,
// which would send the Client back to the old primary, failed over but
// alive; but not for ever, in case the announcement was false and no
// sentinel ever names the node.
func TestAPromotedNodeThatCannotBeReachedIsWaitedForAWhile(t *testing.T) {
	primary := redistest.Start(t)
	host, port, _ := net.SplitHostPort(primary.Addr)
	gone := redistest.ClosedAddr(t)
	ghost, gport, _ := net.SplitHostPort(gone)
	var answered atomic.Int64
	sentinel := fakeSentinel(t, []string{"name", "mymaster", "ip", host, "port", port, "config-epoch", "1"}, []string{
		promotedAnnouncement(fmt.Sprintf("slave %s %s %s @ mymaster %s %s", gone, ghost, gport, host, port)),
	}, &answered)
	c, err := conn.NewClient("redis+sentinel://" + sentinel.Addr + "/mymaster")
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	heard := time.Now() // at the latest: the sentinel announces once its watcher subscribes
	redistest.Eventually(t, func() bool {
		call, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_, err := c.Do(call, "CLIENT", "ID")
		return err != nil
	}, 5*time.Second, 5*time.Millisecond, "the client stayed on the primary the promotion replaced")
	call, cancel := context.WithTimeout(ctx, time.Second)
	_, err = c.Do(call, "CLIENT", "ID")
	cancel()
	require.Error(t, err, "the client went back to the old primary at once")
	var back time.Duration
	redistest.Eventually(t, func() bool {
		call, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := c.Do(call, "CLIENT", "ID")
		back = time.Since(heard)
		return err == nil
	}, 15*time.Second, 10*time.Millisecond, "the client never gave up on the unreachable promoted node")
	t.Logf("back on the primary %v after the announcement", back.Round(time.Millisecond))
}

// A sentinel's answer that names no usable primary is an error that says
// what was wrong with it, and the dial goes on to the next sentinel.
func TestASentinelsBadAnswerIsPassedOverWithItsReason(t *testing.T) {
	for _, c := range []struct {
		name   string
		master []string
		want   string
	}{
		{"a port out of range", []string{"ip", "127.0.0.1", "port", "99999", "config-epoch", "1"}, `port "99999" is out of range`},
		{"no address", []string{"port", "6379", "config-epoch", "1"}, "names no address"},
		{"no epoch", []string{"ip", "127.0.0.1", "port", "6379"}, `config-epoch "" is no epoch`},
		{"a negative epoch", []string{"ip", "127.0.0.1", "port", "6379", "config-epoch", "-1"}, "is no epoch"},
		{"an odd list", []string{"ip"}, "no list of fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var answered atomic.Int64
			sentinel := fakeSentinel(t, c.master, nil, &answered)
			client, err := conn.NewClient("redis+sentinel://" + sentinel.Addr + "/mymaster")
			require.NoError(t, err)
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = client.Do(ctx, "PING")
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, "no sentinel named a primary")
		})
	}
}

// A sentinel that lags behind a failover names the old primary with the
// old epoch. Once a Client has heard of a newer one, it leaves the old
// primary and does not go back there, though the lagging sentinel comes
// first in the address and the old primary still says it is one.
func TestASentinelThatNamesAnOlderEpochIsPassedOver(t *testing.T) {
	old, promoted := redistest.Start(t), redistest.Start(t)
	var lagging, current atomic.Int64
	// The lagging sentinel takes no subscription: the Client's watcher
	// moves on to the current one, and hears the new epoch there.
	behind := fakeSentinel(t, fields(old.Addr, "0"), nil, &lagging)
	ahead := fakeSentinel(t, fields(promoted.Addr, "1"), []string{}, &current)
	c, err := conn.NewClient("redis+sentinel://" + behind.Addr + "," + ahead.Addr + "/mymaster")
	require.NoError(t, err)
	defer c.Close()
	_, oldPort, _ := net.SplitHostPort(old.Addr)
	_, newPort, _ := net.SplitHostPort(promoted.Addr)
	require.Equal(t, oldPort, portOf(c), "the first sentinel answered first")
	redistest.Eventually(t, func() bool { return portOf(c) == newPort }, 10*time.Second, 5*time.Millisecond,
		"the client stayed with the older epoch")
	// Asked again and again, the client stays: the lagging sentinel is
	// asked first on every dial, and passed over.
	asked := lagging.Load()
	time.Sleep(2500 * time.Millisecond) // past the watcher's next question
	require.Equal(t, newPort, portOf(c))
	require.Equal(t, asked, lagging.Load(), "the client dialled again")
}

// fields is SENTINEL MASTER's reply, naming the primary at addr at epoch.
func fields(addr, epoch string) []string {
	host, port, _ := net.SplitHostPort(addr)
	return []string{"name", "mymaster", "ip", host, "port", port, "config-epoch", epoch}
}

// A dial to a primary that never answers (a dead host, whose packets go
// nowhere, holds a dial for its whole timeout) ends when the sentinels
// name another: the call goes on to the new primary at the watcher's
// next question, not at the dial timeout.
func TestADialToADeadPrimaryEndsWhenTheSentinelsNameAnother(t *testing.T) {
	first, promoted := redistest.Start(t), redistest.Start(t)
	dead := redistest.NewFake(t, func(s *redistest.Session) {
		for { // reads, never answers
			if _, err := s.ReadCommand(); err != nil {
				return
			}
		}
	})
	var answer atomic.Pointer[[]string]
	name := func(addr, epoch string) {
		f := fields(addr, epoch)
		answer.Store(&f)
	}
	name(first.Addr, "0")
	var answered atomic.Int64
	sentinel := changingSentinel(t, func() []string { return *answer.Load() }, []string{}, &answered)
	c, err := conn.NewClient("redis+sentinel://"+sentinel.Addr+"/mymaster", conn.WithDialTimeout(time.Minute))
	require.NoError(t, err)
	defer c.Close()
	_, firstPort, _ := net.SplitHostPort(first.Addr)
	_, newPort, _ := net.SplitHostPort(promoted.Addr)
	require.Equal(t, firstPort, portOf(c)) // the first dial starts the watcher

	// The sentinels name the dead node; the watcher breaks the
	// connection, and the next call dials there and waits.
	name(dead.Addr, "1")
	type result struct {
		port    string
		err     error
		waiting time.Duration
	}
	got := make(chan result, 1)
	var waiting atomic.Bool // a call dialled the dead node: no error may reach it
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			began := time.Now()
			v, err := c.Do(ctx, "CONFIG", "GET", "port")
			cancel()
			switch {
			case errors.Is(err, conn.ErrBroken) && !waiting.Load(): // the watcher broke it in flight
			case err == nil && len(v.Elems) == 2 && v.Elems[1].Str == firstPort: // not yet
				time.Sleep(5 * time.Millisecond)
			case err != nil:
				got <- result{err: err, waiting: time.Since(began)}
				return
			default:
				got <- result{port: v.Elems[1].Str, waiting: time.Since(began)}
				return
			}
		}
	}()
	redistest.Eventually(t, func() bool { return dead.Accepted() > 0 }, 10*time.Second, 5*time.Millisecond,
		"no call dialled the dead node")
	waiting.Store(true)
	named := time.Now()
	name(promoted.Addr, "2")
	select {
	case r := <-got:
		require.NoError(t, r.err, "the call waited on the dead node for %v", r.waiting)
		require.Equal(t, newPort, r.port)
		t.Logf("the call reached the new primary %v after a sentinel named it, %v after it began",
			time.Since(named).Round(time.Millisecond), r.waiting.Round(time.Millisecond))
	case <-time.After(45 * time.Second):
		t.Fatal("the call did not return within its 30s context")
	}
}

// A dial through sentinels that finds no primary (here: the sentinel
// does not know the name) is a *DialError, whatever the sentinels
// answered: nothing of the call was sent, and a caller such as a release
// may tell so even when an answer was an error reply.
func TestADialThroughSentinelsThatFindsNoPrimaryIsADialError(t *testing.T) {
	sentinel := redistest.NewFake(t, func(s *redistest.Session) {
		for {
			if _, err := s.ReadCommand(); err != nil {
				return
			}
			_ = s.Send("-ERR No such master with that name\r\n")
		}
	})
	for _, dial := range []func() error{
		func() error {
			_, err := conn.Dial(context.Background(), "redis+sentinel://"+sentinel.Addr+"/mymaster")
			return err
		},
		func() error {
			c, err := conn.NewClient("redis+sentinel://" + sentinel.Addr + "/mymaster")
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Do(context.Background(), "PING")
			return err
		},
	} {
		err := dial()
		require.ErrorAs(t, err, new(*conn.DialError))
		require.ErrorIs(t, err, resp.Prefix("ERR"))
	}
}
