package integration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// configRun is how long each mode contends on each configuration.
const configRun = time.Second

// minimalACL is the least a Redis user needs for baton with its default
// key prefix (baton:), in both modes, with and without the manager: the
// commands baton sends and those its scripts call, its keys, its
// channels, and the keyspace notifications of its keys. CONFIG GET lets
// Open check the eviction policy and the subscriber the keyspace events;
// without it, fast mode needs the events set by the operator and the
// subscriber made with WithKeyspaceEventsConfigured. CLIENT TRACKING
// lets a lease whose Done was asked for hear at once that its lock was
// lost on the server; without it, the lease ends at its deadline. The
// README quotes it.
var minimalACL = strings.Join([]string{
	"user baton on >secret",
	"resetkeys ~baton:*",
	"resetchannels &baton:* &__keyspace@*__:baton:*",
	"-@all +hello +auth +ping +config|get +client|tracking",
	"+eval +evalsha +script|load +subscribe +unsubscribe +pubsub|numsub",
	"+get +set +del +exists +incr +pexpire +pttl +time +publish",
	"+hget +hset +hdel +zadd +zrange +zrem +zcard",
	"+rpush +lpop +lpos +lrem +lrange +lindex",
}, " ")

// bothModes runs a contention of each mode, with and without the
// manager's hold, against addr.
func bothModes(t *testing.T, addr string, opts ...lock.Option) {
	t.Helper()
	for _, m := range []mix{defaultMix, withFair(defaultMix)} {
		for _, hold := range []time.Duration{0, 50 * time.Millisecond} {
			m.hold = hold
			v := contention(t, addr, m, 2, idle(configRun/2), opts...)
			require.Positive(t, v.ok)
		}
	}
}

// TestConfigurations runs both modes on the server configurations users
// deploy, and checks the clear refusals of those baton cannot serve.
func TestConfigurations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		t.Run("default", func(t *testing.T) {
			srv := b.start(t, spec{})
			bothModes(t, srv.Addr())
		})
		t.Run("io-threads", func(t *testing.T) {
			srv := b.start(t, spec{config: []string{"io-threads 4", "io-threads-do-reads yes"}})
			require.Equal(t, "4", srv.Do(t, "CONFIG", "GET", "io-threads").Elems[1].Str)
			bothModes(t, srv.Addr())
		})
		t.Run("no keyspace events, CONFIG refused", func(t *testing.T) {
			srv := b.start(t, spec{config: []string{`notify-keyspace-events ""`, `rename-command CONFIG ""`}})
			_, err := lock.Open(ctx, srv.Addr())
			require.ErrorIs(t, err, subscriber.ErrKeyspaceEvents)
			var serverErr *resp.Error
			require.ErrorAs(t, err, &serverErr, "the server's refusal is in the error")
			for _, hold := range []time.Duration{0, 50 * time.Millisecond} {
				m := withFair(defaultMix)
				m.hold = hold
				contention(t, srv.Addr(), m, 2, idle(configRun/2))
			}
		})
		t.Run("ACL user with the minimal rights", func(t *testing.T) {
			srv := b.start(t, spec{config: []string{minimalACL, "notify-keyspace-events K$gxe"}})
			bothModes(t, "redis://baton:secret@"+srv.Addr())
			require.Empty(t, srv.Do(t, "ACL", "LOG").Elems, "a command or key was refused")

			_, err := lock.Open(ctx, "redis://baton:wrong@"+srv.Addr())
			require.ErrorIs(t, err, resp.WrongPass)
			require.NotContains(t, err.Error(), "wrong", "the password is not in the error")
		})
		t.Run("ACL user of earlier versions, without PUBSUB NUMSUB", func(t *testing.T) {
			// The hand-off counts a channel's subscribers with PUBSUB
			// NUMSUB, which earlier versions' minimal ACL lacks. Refused
			// inside a write-back, after the state's write, it must not
			// make the write-back answer with an error (the count checks
			// that every failed Modify wrote nothing): the hand-off falls
			// back on PUBLISH's count.
			acl := strings.Replace(minimalACL, " +pubsub|numsub", "", 1)
			require.NotEqual(t, minimalACL, acl)
			srv := b.start(t, spec{config: []string{acl, "notify-keyspace-events K$gxe"}})
			bothModes(t, "redis://baton:secret@"+srv.Addr())
			require.NotEmpty(t, srv.Do(t, "ACL", "LOG").Elems, "NUMSUB was refused, so the test tried it")
		})
		t.Run("ACL user without a right", func(t *testing.T) {
			// The same user without ZADD, which fair mode's queue needs:
			// the server's refusal (inside a script, an ERR) reaches the
			// caller at once, and the holder is unharmed.
			srv := b.start(t, spec{config: []string{strings.Replace(minimalACL, "+zadd ", "", 1)}})
			l, err := lock.Open(ctx, "redis://baton:secret@"+srv.Addr(), lock.WithFair())
			require.NoError(t, err)
			defer l.Close()
			held, err := l.Lock(ctx, "k")
			require.NoError(t, err) // a free lock with no queue needs no ZADD
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err = l.Lock(callCtx, "k")
			var serverErr *resp.Error
			require.ErrorAs(t, err, &serverErr)
			require.NoError(t, callCtx.Err(), "the refusal came at once")
			require.NoError(t, held.Unlock(ctx))
		})
		t.Run("TLS", func(t *testing.T) {
			srv := b.start(t, spec{tls: true})
			bothModes(t, "rediss://"+srv.TLSAddr(), lock.WithConnOptions(conn.WithTLS(srv.TLSConfig())))

			_, err := lock.Open(ctx, "rediss://"+srv.TLSAddr()) // the system's roots do not know the CA
			require.Error(t, err)
		})
		t.Run("unix socket", func(t *testing.T) {
			// A socket is the host's: on every backend, a process.
			srv := redistest.Start(t, redistest.WithUnixSocket())
			bothModes(t, "unix://"+srv.UnixSocket)
		})
		t.Run("evicting maxmemory-policy", func(t *testing.T) {
			srv := b.start(t, spec{config: []string{"maxmemory 64mb", "maxmemory-policy allkeys-lru"}})
			for _, fair := range []bool{false, true} {
				var opts []lock.Option
				if fair {
					opts = append(opts, lock.WithFair())
				}
				_, err := lock.Open(ctx, srv.Addr(), opts...)
				require.ErrorIs(t, err, lock.ErrInvalid)
				l, err := lock.Open(ctx, srv.Addr(), append(opts, lock.WithEvictionAllowed())...)
				require.NoError(t, err, "the refusal can be overridden")
				require.NoError(t, l.Close())
			}
		})
	})
}
