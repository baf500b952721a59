package cmdstats_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cmdstats"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/resp"
)

func newClient(t *testing.T, addr string, opts ...conn.Option) *conn.Client {
	t.Helper()
	c, err := conn.NewClient(addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestScriptCommandsAreCounted checks, on a real server, what the package
// doc says commandstats counts: the commands a script calls count under
// their own names beside the EVAL, and a reading's INFO is counted by the
// next one. Both RESP2 (a bulk reply) and RESP3 (a verbatim one).
func TestScriptCommandsAreCounted(t *testing.T) {
	srv := redistest.Start(t)
	for _, proto := range []struct {
		name string
		opts []conn.Option
	}{{"RESP2", nil}, {"RESP3", []conn.Option{conn.WithRESP3()}}} {
		t.Run(proto.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := newClient(t, srv.Addr, proto.opts...)
			before, err := cmdstats.Read(ctx, c)
			require.NoError(t, err)
			_, err = c.Do(ctx, "EVAL", "redis.call('set', KEYS[1], 'v'); return redis.call('del', KEYS[1])", "1", "cmdstats-test")
			require.NoError(t, err)
			after, err := cmdstats.Read(ctx, c)
			require.NoError(t, err)

			d, err := cmdstats.Delta(before, after)
			require.NoError(t, err)
			calls := map[string]int64{}
			for name, c := range d {
				calls[name] = c.Calls
			}
			require.Equal(t, map[string]int64{"eval": 1, "set": 1, "del": 1, "info": 1}, calls)
			require.EqualValues(t, 1, d.ScriptCalls())
			require.EqualValues(t, 3, d.Without("info").Calls())
		})
	}
}

func TestReadRefusals(t *testing.T) {
	cases := []struct {
		name    string
		reply   string
		check   func(t *testing.T, err error)
		wantLen int
	}{
		{
			name:  "an error reply (INFO renamed or refused by ACL)",
			reply: "-NOPERM this user has no permissions to run the 'info' command\r\n",
			check: func(t *testing.T, err error) {
				var refused *resp.Error
				require.ErrorAs(t, err, &refused)
				require.ErrorContains(t, err, "INFO commandstats")
			},
		},
		{
			name:  "not a string",
			reply: ":42\r\n",
			check: func(t *testing.T, err error) { require.ErrorIs(t, err, cmdstats.ErrMalformed) },
		},
		{
			name:  "garbage in the text",
			reply: bulk("cmdstat_get:calls=x"),
			check: func(t *testing.T, err error) { require.ErrorIs(t, err, cmdstats.ErrMalformed) },
		},
		{
			name:    "a good reply",
			reply:   bulk("# Commandstats\r\ncmdstat_get:calls=1,usec=2\r\ncmdstat_set:calls=3\r\n"),
			wantLen: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := redistest.NewFake(t, func(s *redistest.Session) {
				if s.Expect("INFO", "commandstats") {
					_ = s.Send(c.reply)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := cmdstats.Read(ctx, newClient(t, fake.Addr))
			if c.check == nil {
				require.NoError(t, err)
				require.Len(t, s, c.wantLen)
				return
			}
			require.Error(t, err)
			require.Nil(t, s)
			c.check(t, err)
		})
	}
}

// bulk frames s as a RESP bulk string.
func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }
