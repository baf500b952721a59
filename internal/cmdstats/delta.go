package cmdstats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrWentBack is matched when a counter is lower in the later reading:
// the counters were reset between the readings (CONFIG RESETSTAT, a
// restart, a failover to another server), so their difference means
// nothing.
var ErrWentBack = errors.New("cmdstats: counters went back between the readings (reset, restart or failover)")

// scriptCommands run scripts; the commands those scripts call are counted
// under their own names as well.
var scriptCommands = []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}

// Delta returns what the server counted between two readings: after minus
// before, for each command with any counter that moved. A command missing
// from before counts from zero; one missing from after, or any counter
// lower in after, is an error matching ErrWentBack.
func Delta(before, after Stats) (Stats, error) {
	for name, b := range before {
		if _, ok := after[name]; !ok && b != (Counters{}) {
			return nil, fmt.Errorf("%w: %s is gone", ErrWentBack, quote(name))
		}
	}
	d := Stats{}
	for name, a := range after {
		b := before[name]
		if a.Calls < b.Calls || a.Usec < b.Usec || a.RejectedCalls < b.RejectedCalls || a.FailedCalls < b.FailedCalls {
			return nil, fmt.Errorf("%w: %s calls %d, then %d", ErrWentBack, quote(name), b.Calls, a.Calls)
		}
		c := Counters{
			Calls: a.Calls - b.Calls, Usec: a.Usec - b.Usec,
			RejectedCalls: a.RejectedCalls - b.RejectedCalls, FailedCalls: a.FailedCalls - b.FailedCalls,
		}
		if c != (Counters{}) {
			d[name] = c
		}
	}
	return d, nil
}

// Calls returns the calls of every command together. The sum stops at
// math.MaxInt64 rather than wrapping, whatever a server claims.
func (s Stats) Calls() int64 {
	var n int64
	for _, c := range s {
		n = addSaturating(n, c.Calls)
	}
	return n
}

// ScriptCalls returns the calls of the commands that run scripts (EVAL,
// EVALSHA, FCALL and their read-only forms). Calls counts these and also
// every command the scripts called.
func (s Stats) ScriptCalls() int64 {
	var n int64
	for _, name := range scriptCommands {
		n = addSaturating(n, s[name].Calls)
	}
	return n
}

// Without returns a copy of s without the named commands: a benchmark
// leaves out the INFO its readings cost, say.
func (s Stats) Without(names ...string) Stats {
	out := make(Stats, len(s))
	for name, c := range s {
		if !slices.Contains(names, name) {
			out[name] = c
		}
	}
	return out
}

// Names returns the commands of s, most calls first, then by name: the
// order of a table.
func (s Stats) Names() []string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(s[b].Calls, s[a].Calls), cmp.Compare(a, b))
	})
	return names
}

func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
