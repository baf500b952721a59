package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/internal/replydeadline"
	"github.com/batonlock/baton/resp"
)

var keySlot = cluster.Slot("k")

// TestMovedResendsToNamedNode: node a serves every slot until it answers
// MOVED for key k once; the batch goes again, whole and in one write, to
// node b, which the map then names for k's slot, whether a refresh was
// allowed (a then gives b the slots) or not (the MOVED alone teaches it).
func TestMovedResendsToNamedNode(t *testing.T) {
	tests := []struct {
		name      string
		interval  time.Duration
		wantAsked []string // what node a reads
	}{
		{"refresh allowed", 0, []string{"CLUSTER SHARDS", "PING", "GET k", "CLUSTER SHARDS"}},
		{"refresh within the interval", time.Hour, []string{"CLUSTER SHARDS", "PING", "GET k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := startNode(t), startNode(t)
			var shards atomic.Int32
			a.setScript(func(args []string) string {
				switch {
				case isCommand(args, "CLUSTER SHARDS") && shards.Add(1) == 1:
					return allSlotsTo(t, a.Addr)
				case isCommand(args, "CLUSTER SHARDS"):
					return allSlotsTo(t, b.Addr)
				case isCommand(args, "PING"):
					return "+PONG\r\n"
				}
				return errReply(fmt.Sprintf("MOVED %d %s", keySlot, b.Addr))
			})
			b.setScript(func(args []string) string {
				if isCommand(args, "PING") {
					return "+PONG\r\n"
				}
				return bulk("from b")
			})
			var wire wireLog
			c := newClient(t, []string{a.Addr}, cluster.WithRefreshInterval(tt.interval),
				cluster.WithConnOptions(conn.WithTap(wire.tap)))
			ctx := testContext(t)

			replies, err := c.DoMulti(ctx, "k", []string{"PING"}, []string{"GET", "k"})
			require.NoError(t, err)
			require.Equal(t, "PONG", replies[0].Str)
			require.Equal(t, "from b", replies[1].Str)
			require.Equal(t, b.Addr, c.SlotOwner(keySlot))
			require.Contains(t, wire.Writes(), string(resp.AppendCommand(nil, "PING"))+string(resp.AppendCommand(nil, "GET", "k")),
				"the batch went again in one write")

			v, err := c.Do(ctx, "k", "GET", "k")
			require.NoError(t, err)
			require.Equal(t, "from b", v.Str)
			require.Equal(t, tt.wantAsked, a.commands())
			require.Equal(t, []string{"PING", "GET k", "GET k"}, b.commands())
		})
	}
}

// TestAskSendsAskingInOneWrite: node a answers ASK for k once; node b gets
// each command of the batch after an ASKING, all in one write, and the
// caller gets the commands' replies alone. The map does not change: the
// next call goes to a again.
func TestAskSendsAskingInOneWrite(t *testing.T) {
	tests := []struct {
		name  string
		batch [][]string
		want  []string // what node b reads
	}{
		{"one command", [][]string{{"GET", "k"}}, []string{"ASKING", "GET k"}},
		{"PING and a command", [][]string{{"PING"}, {"GET", "k"}}, []string{"ASKING", "PING", "ASKING", "GET k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := startNode(t), startNode(t)
			var asked atomic.Bool
			a.setScript(func(args []string) string {
				switch {
				case isCommand(args, "CLUSTER SHARDS"):
					return allSlotsTo(t, a.Addr)
				case isCommand(args, "PING"):
					return "+PONG\r\n"
				case !asked.Swap(true):
					return errReply(fmt.Sprintf("ASK %d %s", keySlot, b.Addr))
				}
				return bulk("from a")
			})
			b.setScript(func(args []string) string {
				switch {
				case isCommand(args, "ASKING"):
					return ok
				case isCommand(args, "PING"):
					return "+PONG\r\n"
				}
				return bulk("from b")
			})
			var wire wireLog
			c := newClient(t, []string{a.Addr}, cluster.WithRefreshInterval(0),
				cluster.WithConnOptions(conn.WithTap(wire.tap)))
			ctx := testContext(t)

			replies, err := c.DoMulti(ctx, "k", tt.batch...)
			require.NoError(t, err)
			require.Len(t, replies, len(tt.batch))
			require.Equal(t, "from b", replies[len(replies)-1].Str)
			require.Equal(t, tt.want, b.commands(), "b sees ASKING before each command")
			var oneWrite []byte
			for _, cmd := range b.commands() {
				oneWrite = resp.AppendCommand(oneWrite, strings.Fields(cmd)...)
			}
			require.Contains(t, wire.Writes(), string(oneWrite), "ASKING and the batch left in one write")
			require.Equal(t, a.Addr, c.SlotOwner(keySlot), "ASK leaves the map as it is")

			v, err := c.Do(ctx, "k", "GET", "k")
			require.NoError(t, err)
			require.Equal(t, "from a", v.Str)
			require.Equal(t, 1, a.count("CLUSTER SHARDS"), "ASK refreshes nothing")
		})
	}
}

// TestRedirectsAreBounded: two nodes that send each other the call
// forever; it is sent 1+WithMaxRetries times, then fails with
// ErrTooManyRetries and the last redirect.
func TestRedirectsAreBounded(t *testing.T) {
	for _, prefix := range []resp.Prefix{resp.Moved, resp.Ask} {
		t.Run(string(prefix), func(t *testing.T) {
			a, b := startNode(t), startNode(t)
			bounce := func(to *node) func([]string) string {
				return func(args []string) string {
					switch {
					case isCommand(args, "CLUSTER SHARDS"):
						return allSlotsTo(t, a.Addr)
					case isCommand(args, "ASKING"):
						return ok
					}
					return errReply(fmt.Sprintf("%s %d %s", string(prefix), keySlot, to.Addr))
				}
			}
			a.setScript(bounce(b))
			b.setScript(bounce(a))
			c := newClient(t, []string{a.Addr}, cluster.WithMaxRetries(3))

			_, err := c.Do(testContext(t), "k", "GET", "k")
			require.ErrorIs(t, err, cluster.ErrTooManyRetries)
			require.ErrorIs(t, err, prefix)
			require.Equal(t, 4, a.count("GET k")+b.count("GET k"))
		})
	}
}

// TestMalformedRedirects: a MOVED or ASK that cannot be followed fails the
// call with the reply, and as a protocol error when it is garbled.
func TestMalformedRedirects(t *testing.T) {
	tests := []struct {
		reply    string
		protocol bool
	}{
		{"MOVED", true},
		{"MOVED 12", true},
		{"MOVED x 127.0.0.1:7000", true},
		{"MOVED 16384 127.0.0.1:7000", true},
		{"MOVED 12 127.0.0.1", true},
		{"MOVED 12 127.0.0.1:0", true},
		{"MOVED 12 127.0.0.1:7000 extra", true},
		{"MOVED 12 unix:///tmp/x:7000", true},
		{"ASK 12 a/b:7000", true},
		{"ASK 12 ?:7000", false}, // the server does not know the node's address
	}
	for _, tt := range tests {
		t.Run(tt.reply, func(t *testing.T) {
			a := startNode(t)
			a.setScript(func(args []string) string {
				if isCommand(args, "CLUSTER SHARDS") {
					return allSlotsTo(t, a.Addr)
				}
				return errReply(tt.reply)
			})
			c := newClient(t, []string{a.Addr})
			_, err := c.Do(testContext(t), "k", "GET", "k")
			prefix, _, _ := strings.Cut(tt.reply, " ")
			require.ErrorIs(t, err, resp.Prefix(prefix))
			require.Equal(t, tt.protocol, errors.Is(err, resp.ErrProtocol), "%v", err)
			require.Equal(t, 1, a.count("GET k"))
		})
	}
}

// TestRedirectWithoutHost: "MOVED <slot> :<port>", sent by a node that
// does not know its own address, names a port on the host that sent it.
func TestRedirectWithoutHost(t *testing.T) {
	a, b := startNode(t), startNode(t)
	_, bPort := hostPort(t, b.Addr)
	a.setScript(func(args []string) string {
		if isCommand(args, "CLUSTER SHARDS") {
			return allSlotsTo(t, a.Addr)
		}
		return errReply(fmt.Sprintf("MOVED %d :%d", keySlot, bPort))
	})
	b.setScript(func([]string) string { return bulk("from b") })
	c := newClient(t, []string{a.Addr})
	v, err := c.Do(testContext(t), "k", "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "from b", v.Str)
	require.Equal(t, b.Addr, c.SlotOwner(keySlot))
}

// TestUncertainIsNotRetried: a connection that fails with the batch in
// flight leaves its outcome unknown; the call returns that, and nothing is
// sent again, here or elsewhere.
func TestUncertainIsNotRetried(t *testing.T) {
	a := startNode(t)
	a.setScript(func(args []string) string {
		if isCommand(args, "CLUSTER SHARDS") {
			return allSlotsTo(t, a.Addr)
		}
		return cut
	})
	c := newClient(t, []string{a.Addr}, cluster.WithRefreshInterval(0))
	_, err := c.DoMulti(testContext(t), "k", []string{"INCR", "k"})
	var uncertain *conn.UncertainError
	require.ErrorAs(t, err, &uncertain)
	require.ErrorIs(t, err, conn.ErrBroken)
	require.Equal(t, []string{"CLUSTER SHARDS", "INCR k"}, a.commands())
	require.Equal(t, 1, a.Accepted(), "no redial, no refresh")
}

// TestUnreachableNodeRefreshesAndRetries: the slot's primary does not
// answer its dial, so nothing was sent: the client asks the cluster again
// and sends the batch to the primary it names now.
func TestUnreachableNodeRefreshesAndRetries(t *testing.T) {
	seed, next := startNode(t), startNode(t)
	dead := redistest.ClosedAddr(t)
	var shards atomic.Int32
	seed.setScript(func(args []string) string {
		if shards.Add(1) == 1 {
			return allSlotsTo(t, dead)
		}
		return allSlotsTo(t, next.Addr)
	})
	next.setScript(func([]string) string { return bulk("from next") })
	c := newClient(t, []string{seed.Addr}, cluster.WithRefreshInterval(0))
	require.Equal(t, dead, c.SlotOwner(keySlot))

	v, err := c.Do(testContext(t), "k", "GET", "k")
	require.NoError(t, err)
	require.Equal(t, "from next", v.Str)
	require.Equal(t, next.Addr, c.SlotOwner(keySlot))
	require.Equal(t, []string{"GET k"}, next.commands())
}

// TestUnreachableNodeIsBounded: a primary that stays unreachable fails the
// call after 1+WithMaxRetries dials, with the last dial's error.
func TestUnreachableNodeIsBounded(t *testing.T) {
	seed := startNode(t)
	dead := redistest.ClosedAddr(t)
	seed.setScript(func([]string) string { return allSlotsTo(t, dead) })
	c := newClient(t, []string{seed.Addr}, cluster.WithRefreshInterval(0), cluster.WithMaxRetries(2),
		cluster.WithConnOptions(conn.WithRedialBackoff(time.Millisecond, time.Millisecond)))
	_, err := c.Do(testContext(t), "k", "GET", "k")
	require.ErrorIs(t, err, cluster.ErrTooManyRetries)
	require.ErrorContains(t, err, dead)
	require.Equal(t, 3, seed.count("CLUSTER SHARDS"), "New's, then one refresh per failed dial but the last")
}

// TestHandshakeRefusalIsNotRetried: a node that refuses the handshake
// (a wrong password) is not unreachable: the call fails at once.
func TestHandshakeRefusalIsNotRetried(t *testing.T) {
	a := startNode(t)
	a.setScript(func(args []string) string {
		if isCommand(args, "CLUSTER SHARDS") {
			return allSlotsTo(t, a.Addr)
		}
		return ok
	})
	c := newClient(t, []string{a.Addr}, cluster.WithConnOptions(conn.WithPassword("secret")))
	// Break the connection so that the next call dials again.
	a.setScript(func(args []string) string {
		if isCommand(args, "AUTH secret") {
			return errReply("WRONGPASS invalid username-password pair or user is disabled.")
		}
		return cut
	})
	_, err := c.Do(testContext(t), "k", "GET", "k")
	require.Error(t, err)
	_, err = c.Do(testContext(t), "k", "GET", "k")
	require.ErrorIs(t, err, resp.WrongPass)
	require.Equal(t, 2, a.count("AUTH secret"), "no dial after the refused one")
	require.NotErrorIs(t, err, cluster.ErrTooManyRetries)
}

// TestRefusedForNowIsSentAgain: TRYAGAIN (a multi-key command whose keys
// a migration has split), CLUSTERDOWN (a failover under way), LOADING,
// MASTERDOWN and READONLY (a demoted primary) ran nothing, so the batch
// goes again after a pause, for as long as the caller's context and
// reply deadline allow, however many retries WithMaxRetries allows.
func TestRefusedForNowIsSentAgain(t *testing.T) {
	for _, refusal := range []string{
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"CLUSTERDOWN The cluster is down",
		"LOADING Redis is loading the dataset in memory",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"READONLY You can't write against a read only replica.",
	} {
		prefix := resp.Prefix(strings.Fields(refusal)[0])
		for _, tt := range []struct {
			name     string
			refusals int32
			bound    func(context.Context) (context.Context, context.CancelFunc)
			wantErr  error
		}{
			{"runs on the eighth try", 7, nil, nil},
			{"refused until the reply deadline", 1 << 30, func(ctx context.Context) (context.Context, context.CancelFunc) {
				return replydeadline.With(ctx, time.Now().Add(300*time.Millisecond)), func() {}
			}, prefix},
			{"refused until the context ends", 1 << 30, func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 300*time.Millisecond)
			}, context.DeadlineExceeded},
		} {
			t.Run(string(prefix)+"/"+tt.name, func(t *testing.T) {
				a := startNode(t)
				var calls atomic.Int32
				a.setScript(func(args []string) string {
					switch {
					case isCommand(args, "CLUSTER SHARDS"):
						return allSlotsTo(t, a.Addr)
					case isCommand(args, "PING"):
						return "+PONG\r\n"
					case calls.Add(1) <= tt.refusals:
						return errReply(refusal)
					}
					return bulk("ran")
				})
				c := newClient(t, []string{a.Addr}, cluster.WithMaxRetries(2))
				ctx := testContext(t)
				if tt.bound != nil {
					var cancel context.CancelFunc
					ctx, cancel = tt.bound(ctx)
					defer cancel()
				}
				start := time.Now()
				replies, err := c.DoMulti(ctx, "k", []string{"PING"}, []string{"EVAL", "s", "2", "{k}a", "{k}b"})
				if tt.wantErr == nil {
					require.NoError(t, err)
					require.Equal(t, "ran", replies[1].Str)
					require.Equal(t, 8, int(calls.Load()))
					return
				}
				require.ErrorIs(t, err, tt.wantErr)
				require.ErrorIs(t, err, prefix, "the last refusal is in the error")
				require.NotErrorIs(t, err, cluster.ErrTooManyRetries, "waits count no retry")
				require.Less(t, time.Since(start), 300*time.Millisecond+time.Second, "no wait past the bound")
				require.GreaterOrEqual(t, int(calls.Load()), 3)
			})
		}
	}
}
