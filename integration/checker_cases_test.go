package integration_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheCheckerCatchesWhatItMust feeds the history checks made-up
// histories: each broken one must be caught, each sound one passed, so
// that a clean run of the suite means something.
func TestTheCheckerCatchesWhatItMust(t *testing.T) {
	ok := func(token string, call, ret int64, old int) *modifyOp {
		return &modifyOp{token: token, call: call, ret: ret, old: old, seen: true, outcome: outcomeOK}
	}
	unsure := func(token string, call int64, old int) *modifyOp {
		return &modifyOp{token: token, call: call, ret: math.MaxInt64, old: old, seen: true, outcome: outcomeUncertain}
	}
	read := func(token string, at int64, n int) modifyOp {
		return modifyOp{token: token, call: at, ret: at + 1, old: n}
	}
	lease := func(call, ret int64, fence uint64, unlock int64) leaseOp {
		return leaseOp{token: "a", call: call, ret: ret, fence: fence, unlock: unlock}
	}
	cases := []struct {
		name  string
		p     parsed
		sound bool
	}{
		{"sequential increments", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), ok("a", 3, 4, 1)},
			reads:    []modifyOp{read("a", 10, 2)},
		}, true},
		{"two writers overlapped: both saw 0", parsed{
			modifies: []*modifyOp{ok("a", 1, 5, 0), ok("a", 2, 6, 0)},
			reads:    []modifyOp{read("a", 10, 1)},
		}, false},
		{"a successful write lost", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), ok("a", 3, 4, 1)},
			reads:    []modifyOp{read("a", 10, 1)},
		}, false},
		{"a write landed twice", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0)},
			reads:    []modifyOp{read("a", 10, 2)},
		}, false},
		{"an uncertain write that did not land", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), unsure("a", 3, 1)},
			reads:    []modifyOp{read("a", 10, 1)},
		}, true},
		{"an uncertain write that landed", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), unsure("a", 3, 1), ok("a", 11, 12, 2)},
			reads:    []modifyOp{read("a", 20, 3)},
		}, true},
		{"a failed write is not counted", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), {token: "a", call: 3, ret: 4, old: 1, seen: true, outcome: outcomeFailed}},
			reads:    []modifyOp{read("a", 10, 1)},
		}, true},
		{"a reset explains a count that fell", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), ok("a", 3, 4, 1), ok("a", 7, 8, 0)},
			reads:    []modifyOp{read("a", 10, 1)},
			resets:   []reset{{5, 6}},
		}, true},
		{"a write from before a reset landed after it", parsed{
			modifies: []*modifyOp{ok("a", 1, 2, 0), ok("a", 3, 4, 1), ok("a", 7, 8, 0)},
			reads:    []modifyOp{read("a", 10, 3)},
			resets:   []reset{{5, 6}},
		}, false},
		{"tokens are separate", parsed{
			modifies: []*modifyOp{ok("a", 1, 5, 0), ok("b", 2, 6, 0)},
			reads:    []modifyOp{read("a", 10, 1), read("b", 10, 1)},
		}, true},
		{"fences increase, leases apart", parsed{
			leases: []leaseOp{lease(1, 2, 10, 3), lease(4, 5, 11, 6)},
		}, true},
		{"a fence went back", parsed{
			leases: []leaseOp{lease(1, 2, 11, 3), lease(4, 5, 10, 6)},
		}, false},
		{"a fence granted twice", parsed{
			leases: []leaseOp{lease(1, 5, 10, 0), lease(2, 6, 10, 0)},
		}, false},
		{"two leases held at once", parsed{
			leases: []leaseOp{lease(1, 2, 10, 8), lease(3, 4, 11, 5)},
		}, false},
		{"a call panicked", parsed{
			panics: []event{{Kind: kindDone, Op: "test/1", Token: "a", Panic: "index out of range"}},
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := check(c.p)
			if c.sound {
				require.Empty(t, v.problems)
			} else {
				require.NotEmpty(t, v.problems)
			}
		})
	}
}
