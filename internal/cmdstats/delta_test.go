package cmdstats_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/cmdstats"
)

func TestDelta(t *testing.T) {
	cases := []struct {
		name          string
		before, after cmdstats.Stats
		want          cmdstats.Stats
		wentBack      bool
	}{
		{
			name:   "counters that moved",
			before: cmdstats.Stats{"get": {Calls: 1, Usec: 10}, "set": {Calls: 5, Usec: 50}},
			after:  cmdstats.Stats{"get": {Calls: 4, Usec: 25, FailedCalls: 1}, "set": {Calls: 5, Usec: 50}},
			want:   cmdstats.Stats{"get": {Calls: 3, Usec: 15, FailedCalls: 1}},
		},
		{
			name:   "a command new in after counts from zero",
			before: cmdstats.Stats{},
			after:  cmdstats.Stats{"evalsha": {Calls: 2, Usec: 9}},
			want:   cmdstats.Stats{"evalsha": {Calls: 2, Usec: 9}},
		},
		{
			name:   "only rejected calls moved",
			before: cmdstats.Stats{"get": {Calls: 1}},
			after:  cmdstats.Stats{"get": {Calls: 1, RejectedCalls: 2}},
			want:   cmdstats.Stats{"get": {RejectedCalls: 2}},
		},
		{
			name:     "calls went back",
			before:   cmdstats.Stats{"get": {Calls: 7}},
			after:    cmdstats.Stats{"get": {Calls: 1}},
			wentBack: true,
		},
		{
			name:     "usec went back",
			before:   cmdstats.Stats{"get": {Calls: 1, Usec: 9}},
			after:    cmdstats.Stats{"get": {Calls: 2, Usec: 1}},
			wentBack: true,
		},
		{
			name:     "a command is gone (CONFIG RESETSTAT)",
			before:   cmdstats.Stats{"get": {Calls: 7}, "info": {Calls: 1}},
			after:    cmdstats.Stats{"info": {Calls: 2}},
			wentBack: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := cmdstats.Delta(c.before, c.after)
			if c.wentBack {
				require.ErrorIs(t, err, cmdstats.ErrWentBack)
				require.Nil(t, d)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, d)
		})
	}
}

func TestSumsAndSelections(t *testing.T) {
	s := cmdstats.Stats{
		"evalsha": {Calls: 4}, "eval": {Calls: 1}, "fcall_ro": {Calls: 2},
		"get": {Calls: 4}, "ping": {Calls: 3}, "info": {Calls: 1},
	}
	require.EqualValues(t, 15, s.Calls())
	require.EqualValues(t, 7, s.ScriptCalls())
	require.Equal(t, []string{"evalsha", "get", "ping", "fcall_ro", "eval", "info"}, s.Names())

	w := s.Without("info", "nosuch")
	require.EqualValues(t, 14, w.Calls())
	require.NotContains(t, w, "info")
	require.Contains(t, s, "info", "Without changed its receiver")

	huge := cmdstats.Stats{"a": {Calls: math.MaxInt64}, "b": {Calls: 5}, "evalsha": {Calls: math.MaxInt64}, "eval": {Calls: 1}}
	require.EqualValues(t, int64(math.MaxInt64), huge.Calls())
	require.EqualValues(t, int64(math.MaxInt64), huge.ScriptCalls())
	require.Empty(t, cmdstats.Stats(nil).Names())
}
