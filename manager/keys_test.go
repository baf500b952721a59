package manager_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// TestAStateKeyOutsideTheLocksHashTagIsRefused: a state prefix or a lock
// prefix with braces can put <prefix>{token}:state under another hash tag
// than the lock's <prefix>{token}, which the write-back's script may not
// touch on a cluster. Such combinations are refused before anything is
// sent: fn never runs, no lock is taken, and the error matches ErrInvalid,
// for Modify and Get, with and without hold. A combination whose tags
// agree for some tokens only (the token "a" under the lock prefix
// "svc{a}:") is refused for every token: it is a mistake, not a layout.
func TestAStateKeyOutsideTheLocksHashTagIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		lockPrefix string // "" for the lock's default
		state      []manager.Option
	}{
		{name: "a tag in the state prefix", state: []manager.Option{manager.WithKeyPrefix("tenant{7}:")}},
		{name: "a tag in the lock prefix", lockPrefix: "svc{a}:"},
		{name: "other tags in both", lockPrefix: "svc{a}:", state: []manager.Option{manager.WithKeyPrefix("svc{b}:")}},
		{name: "an open brace in the lock prefix", lockPrefix: "svc{"},
		{name: "an open brace in the state prefix", state: []manager.Option{manager.WithKeyPrefix("app{")}},
		{name: "an empty tag in the state prefix", state: []manager.Option{manager.WithKeyPrefix("app{}")}},
	} {
		for _, hold := range []time.Duration{0, time.Hour} {
			t.Run(tc.name+"/hold="+hold.String(), func(t *testing.T) {
				srv.Do(t, "FLUSHALL")
				var lockOpts []lock.Option
				lockPrefix := "baton:"
				if tc.lockPrefix != "" {
					lockPrefix = tc.lockPrefix
					lockOpts = append(lockOpts, lock.WithKeyPrefix(tc.lockPrefix))
				}
				m := newManager(t, openLocker(t, srv, lockOpts...), append(tc.state, manager.WithHold(hold))...)
				ran := false
				for _, token := range []string{"a", "t"} {
					err := m.Modify(ctx, token, func(c *counter) error { ran = true; c.N++; return nil })
					require.ErrorIs(t, err, manager.ErrInvalid, "token %q", token)
					require.False(t, ran, "fn ran, token %q", token)
					_, err = m.Get(ctx, token)
					require.ErrorIs(t, err, manager.ErrInvalid, "token %q", token)
					require.Zero(t, srv.Do(t, "EXISTS", lockPrefix+"{"+token+"}").Int, "the lock is left held, token %q", token)
					require.Zero(t, srv.Do(t, "DBSIZE").Int, "nothing was sent, token %q", token)
				}
			})
		}
	}
}

// TestPrefixesWithTheSameTagWork: a lock prefix and a state prefix that
// fix the same hash tag put every token's lock and state in that tag's
// slot, on one node: Modify works there, on a cluster too.
func TestPrefixesWithTheSameTagWork(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	ctx := context.Background()
	for _, tc := range []struct{ lockPrefix, statePrefix string }{
		{"svc{a}:", "svc{a}:"},
		{"locks{7}:", "tenant{7}:state:"},
	} {
		l, err := lock.Open(ctx, "redis+cluster://"+strings.Join(c.Seeds(), ","), lock.WithKeyPrefix(tc.lockPrefix))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, l.Close()) })
		for _, hold := range []time.Duration{0, time.Hour} {
			m := newManager(t, l, manager.WithKeyPrefix(tc.statePrefix), manager.WithHold(hold))
			for _, token := range []string{"x", "y{z}"} {
				token += hold.String()
				for range 3 {
					require.NoError(t, m.Modify(ctx, token, increment), "%+v, token %q", tc, token)
				}
				v, err := m.Get(ctx, token)
				require.NoError(t, err)
				require.Equal(t, 3, v.N)
			}
			require.NoError(t, m.Close())
		}
	}
}

// TestAStateTTLOutOfRangeIsRefused: a state TTL under a millisecond, or
// over the 100 years that Redis and Lua take exactly, is refused before
// anything is sent, with and without hold.
func TestAStateTTLOutOfRangeIsRefused(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const maxTTL = 100 * 365 * 24 * time.Hour
	for _, ttl := range []time.Duration{0, time.Millisecond - 1, maxTTL + time.Millisecond, time.Duration(math.MaxInt64)} {
		for _, hold := range []time.Duration{0, time.Hour} {
			t.Run(ttl.String()+"/hold="+hold.String(), func(t *testing.T) {
				srv.Do(t, "FLUSHALL")
				m := newManager(t, openLocker(t, srv), manager.WithStateTTL(ttl), manager.WithHold(hold))
				ran := false
				err := m.Modify(ctx, "k", func(c *counter) error { ran = true; c.N++; return nil })
				require.ErrorIs(t, err, manager.ErrInvalid)
				require.False(t, ran, "fn ran")
				require.Zero(t, srv.Do(t, "EXISTS", "baton:{k}").Int, "the lock is left held")
				require.Zero(t, srv.Do(t, "DBSIZE").Int, "nothing was sent")
			})
		}
	}
	m := newManager(t, openLocker(t, srv), manager.WithStateTTL(maxTTL))
	require.NoError(t, m.Modify(ctx, "k", increment))
	ms := srv.Do(t, "PTTL", "baton:{k}:state").Int
	require.InDelta(t, float64(maxTTL/time.Millisecond), float64(ms), float64(time.Minute/time.Millisecond), "the longest state TTL is taken exactly")
}

// New checks the prefixes with two tokens, "a" and "b", on the claim that
// two tags of one kind with different fixed parts agree for one token at
// most. CRC16 is linear: tags "<P>{t" and "<Q>{t" with len(P) == len(Q)
// differ in CRC by an amount that depends only on len(t), so they can
// agree for every one-character token and for no longer one. Compared as
// slots, such a combination was accepted by New and refused token by
// token; compared as tags, New refuses it.
func TestPrefixesWhoseTagsAgreeForShortTokensOnlyAreRefusedAtNew(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	// lock key x{aaa{t} has the tag "aaa{t"; state key y{lvd{t}:state
	// has the tag "lvd{t": the same slot for "a" and "b", not for "ab".
	m := newManager(t, openLocker(t, srv, lock.WithKeyPrefix("x{aaa")), manager.WithKeyPrefix("y{lvd"))
	errA := m.Modify(ctx, "a", increment)
	errAB := m.Modify(ctx, "ab", increment)
	t.Logf("token a: %v; token ab: %v", errA, errAB)
	require.ErrorIs(t, errA, manager.ErrInvalid, "New should refuse prefixes that fail for some tokens")
}
