package integration_test

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkTimeout bounds the linearizability check; a history it cannot
// decide in this time fails the test as undecided.
const checkTimeout = 2 * time.Minute

// The model's operations: a Modify that incremented the count it saw, a
// final read of the count, and a reset of the server, which loses every
// count.
type (
	modelInput struct {
		kind  string // "modify", "read" or "reset"
		token string
	}
	modelOutput struct {
		old       int  // the count the Modify saw, or the one read
		uncertain bool // the Modify may or may not have landed
	}
)

// counterModel is a count per token that only a Modify increments, by
// one, from the count it saw: two holders that overlapped would both see
// the same count, and the history would have no linear order. An
// uncertain Modify may or may not have landed; a reset sets every count to
// zero.
var counterModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{0} },
	Step: func(state, input, output any) []any {
		count := state.(int)
		in := input.(modelInput)
		switch in.kind {
		case "reset":
			return []any{0}
		case "read":
			if output.(modelOutput).old == count {
				return []any{count}
			}
			return nil
		}
		out := output.(modelOutput)
		if out.old != count {
			return nil
		}
		if out.uncertain {
			return []any{count, count + 1}
		}
		return []any{count + 1}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(modelInput), output.(modelOutput)
		return fmt.Sprintf("%s %s old=%d uncertain=%v", in.kind, in.token, out.old, out.uncertain)
	},
}

// The kinds of problem the checks find, which verdict counts.
const (
	problemCount     = "count"           // a final count outside what the Modify calls allow
	problemLinear    = "linearizability" // the counts have no linear order
	problemUndecided = "undecided"       // the linearizability check ran out of time
	problemFence     = "fence"           // a fencing token not above one granted before, or granted twice
	problemOverlap   = "overlap"         // two leases whose Unlock succeeded held the lock at once
	problemPanic     = "panic"           // a call panicked
)

// verdict is what the checks found, and the figures for the log.
type verdict struct {
	problems []string
	kinds    map[string]int // how many of problems are of each kind

	modifies, ok, uncertain, failed int
	leases                          int
	longestCall                     time.Duration // call to return, of those that returned
	worstFenceGap                   uint64        // the largest step between a key's successive tokens
	faults                          map[string]int

	history parsed // what was checked
}

func (v verdict) String() string {
	return fmt.Sprintf("%d modifies (%d ok, %d uncertain, %d failed), %d leases, longest call %v, worst fence gap %d, faults %v",
		v.modifies, v.ok, v.uncertain, v.failed, v.leases, v.longestCall.Round(time.Millisecond), v.worstFenceGap, v.faults)
}

// flag records a problem of kind.
func (v *verdict) flag(kind, problem string) {
	v.problems = append(v.problems, problem)
	v.kinds[kind]++
}

// check runs every check on a history: the counts are linearizable
// (porcupine), hence no two writers overlapped and nothing was lost or
// written twice; without a reset, each final count is between the
// successes and the successes plus the uncertain; leases whose Unlock
// succeeded did not overlap; fencing tokens strictly increase per key;
// no call panicked.
func check(p parsed) verdict {
	v := verdict{faults: p.faults, kinds: map[string]int{}, leases: len(p.leases), history: p, longestCall: p.longestCall}
	var ops []porcupine.Operation
	success := map[string]int{}
	uncertain := map[string]int{}
	for _, m := range p.modifies {
		v.modifies++
		switch m.outcome {
		case outcomeOK:
			v.ok++
			success[m.token]++
		case outcomeUncertain:
			v.uncertain++
			uncertain[m.token]++
		default:
			v.failed++
			continue // nothing written
		}
		ops = append(ops, porcupine.Operation{
			Input: modelInput{"modify", m.token}, Output: modelOutput{m.old, m.outcome == outcomeUncertain},
			Call: m.call, Return: m.ret,
		})
	}
	for _, r := range p.reads {
		ops = append(ops, porcupine.Operation{Input: modelInput{"read", r.token}, Output: modelOutput{old: r.old}, Call: r.call, Return: r.ret})
		if len(p.resets) == 0 && (r.old < success[r.token] || r.old > success[r.token]+uncertain[r.token]) {
			v.flag(problemCount, fmt.Sprintf("token %s: count %d, but %d Modify calls succeeded and %d were uncertain",
				r.token, r.old, success[r.token], uncertain[r.token]))
		}
	}
	var resets []porcupine.Operation
	for _, r := range p.resets {
		resets = append(resets, porcupine.Operation{Input: modelInput{kind: "reset"}, Output: modelOutput{}, Call: r.start, Return: r.end})
	}
	model := counterModel
	model.Partition = func(history []porcupine.Operation) [][]porcupine.Operation {
		byToken := map[string][]porcupine.Operation{}
		for _, op := range history {
			if in := op.Input.(modelInput); in.kind != "reset" {
				byToken[in.token] = append(byToken[in.token], op)
			}
		}
		var parts [][]porcupine.Operation
		for _, part := range byToken {
			parts = append(parts, append(part, resets...))
		}
		return parts
	}
	switch res, info := porcupine.CheckOperationsVerbose(model.ToModel(), append(ops, resets...), checkTimeout); res {
	case porcupine.Ok:
	case porcupine.Illegal:
		problem := "the counts are not linearizable: two writers overlapped, or a write was lost or landed twice"
		if f, err := os.CreateTemp("", "baton-history-*.html"); err == nil {
			if porcupine.Visualize(model.ToModel(), info, f) == nil {
				problem += "; the history, drawn: " + f.Name()
			}
			f.Close()
		}
		v.flag(problemLinear, problem)
	default:
		v.flag(problemUndecided, fmt.Sprintf("the linearizability check could not decide within %v", checkTimeout))
	}
	checkLeases(p.leases, &v)
	if len(p.panics) > 0 {
		first := p.panics[0]
		v.flag(problemPanic, fmt.Sprintf("%d calls panicked; the first, %s on %s: %s", len(p.panics), first.Op, first.Token, first.Panic))
	}
	return v
}

// checkLeases checks, per key, that fencing tokens strictly increase in
// the order leases were granted (a lease that returned before another was
// asked for has the smaller token), and that leases whose Unlock succeeded
// did not overlap. It flags what it finds on v, and sets v.worstFenceGap
// to the largest step between successive tokens of a key.
func checkLeases(leases []leaseOp, v *verdict) {
	byToken := map[string][]leaseOp{}
	for _, l := range leases {
		byToken[l.token] = append(byToken[l.token], l)
	}
	for token, ls := range byToken {
		// Granted before: returned before the other was called.
		byReturn := append([]leaseOp(nil), ls...)
		sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].ret < byReturn[j].ret })
		byCall := append([]leaseOp(nil), ls...)
		sort.Slice(byCall, func(i, j int) bool { return byCall[i].call < byCall[j].call })
		var maxBefore uint64
		next := 0
		for _, l := range byCall {
			for next < len(byReturn) && byReturn[next].ret < l.call {
				maxBefore = max(maxBefore, byReturn[next].fence)
				next++
			}
			if l.fence <= maxBefore {
				v.flag(problemFence, fmt.Sprintf("token %s: fencing token %d granted after a lease with %d", token, l.fence, maxBefore))
			}
		}
		fences := make([]uint64, 0, len(ls))
		for _, l := range ls {
			fences = append(fences, l.fence)
		}
		sort.Slice(fences, func(i, j int) bool { return fences[i] < fences[j] })
		for i := 1; i < len(fences); i++ {
			if fences[i] == fences[i-1] {
				v.flag(problemFence, fmt.Sprintf("token %s: fencing token %d granted twice", token, fences[i]))
			}
			v.worstFenceGap = max(v.worstFenceGap, fences[i]-fences[i-1])
		}
		// Held from return to a successful Unlock's call: those
		// intervals must not overlap.
		var held []leaseOp
		for _, l := range byReturn {
			if l.unlock != 0 {
				held = append(held, l)
			}
		}
		var last leaseOp // of those before, the one held longest
		for i, l := range held {
			if i > 0 && l.ret < last.unlock {
				v.flag(problemOverlap, fmt.Sprintf("token %s: leases %d and %d both held the lock", token, last.fence, l.fence))
			}
			if l.unlock > last.unlock {
				last = l
			}
		}
	}
}
