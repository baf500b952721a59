package integration_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/lock"
)

const (
	// failoverBefore is how long the workload runs before the kill, and
	// failoverAfter how long it runs on once the killed node is back.
	failoverBefore = time.Second
	failoverAfter  = 3 * time.Second
)

// TestAPrimaryKilledDuringContention kills, with SIGKILL, the primary
// that serves some of the tokens while two instances contend on tokens
// spread over three primaries, each with a replica. The replica is
// promoted, the killed node comes back as its replica, and the workload
// goes on a few seconds more; no call on another primary's tokens may
// fail meanwhile, though every node answers CLUSTERDOWN until the
// promotion; the kill, the promotion and the return are
// faults in the history. Fencing tokens come from the server's clock, so
// they keep increasing across the failover.
//
// With lock.WithReplicaAck(1, 500ms), every acquire, extension and
// write-back that succeeded is on the replica before it returns, so the
// history must pass every check: counts linearizable, uncertain outcomes
// free to have landed or not, no two leases held at once, fencing tokens
// increasing. Without it, Redis replicates asynchronously, and the
// failover may lose writes and locks that the old primary had granted but
// not yet passed on: the test does not fail on what the checks find then,
// but logs it, with the figures of both variants. Under -short only fast
// mode runs.
func TestAPrimaryKilledDuringContention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		modes := []mix{defaultMix}
		if !testing.Short() {
			modes = append(modes, withFair(defaultMix))
		}
		for _, m := range modes {
			for _, acked := range []bool{true, false} {
				name := m.String() + "/no ack"
				if acked {
					name = m.String() + "/ack"
				}
				t.Run(name, func(t *testing.T) { primaryKilled(t, b, m, acked) })
			}
		}
	})
}

func primaryKilled(t *testing.T, b *backend, m mix, acked bool) {
	c := b.startCluster(t, 3, 1)
	m, owners := spread(t, c, m, 3)
	slot := tokenSlot(m.token(0))
	victim := c.Primary(t, slot)
	var opts []lock.Option
	if acked {
		opts = append(opts, lock.WithReplicaAck(1, ackTimeout))
	}
	var at failoverTimes
	v := runContention(t, c.URL(), m, 2, func(rec *recorder) {
		time.Sleep(failoverBefore)
		at.kill = now()
		rec.add(event{Kind: kindFault, Fault: "kill", Time: at.kill})
		c.Kill(t, victim)
		at.dead = now()
		c.WaitHealthy(t, clusterSettle)
		at.promoted = now()
		rec.add(event{Kind: kindFault, Fault: "failover", Time: at.promoted})
		successor := c.Primary(t, slot)
		require.NotEqual(t, victim.Addr(), successor.Addr(), "the killed primary still serves its slots")
		t.Logf("%s: %s killed, %s promoted %v later", m, victim.Addr(), successor.Addr(), time.Duration(at.promoted-at.kill).Round(time.Millisecond))
		c.Restart(t, victim)
		c.WaitHealthy(t, clusterSettle)
		at.rejoined = now()
		rec.add(event{Kind: kindFault, Fault: "rejoin", Time: at.rejoined})
		time.Sleep(failoverAfter)
	}, opts...)
	f := figuresOf(v, owners, victim.Addr(), at)
	variant := "without WithReplicaAck"
	if acked {
		variant = fmt.Sprintf("with WithReplicaAck(1, %v)", ackTimeout)
	}
	t.Logf("%s %s: %s; longest call %v; faults %v", m, variant, f, v.longestCall.Round(time.Millisecond), v.faults)
	t.Logf("%s %s: %d problems %v; %d increments lost over %d tokens, %d beyond what the calls allow",
		m, variant, len(v.problems), v.kinds, f.lost, f.lostTokens, f.extra)
	for _, e := range f.commonErrors(5) {
		t.Logf("%s %s: error: %s", m, variant, e)
	}
	require.Positive(t, f.okAfterRejoin, "no call on the killed primary's tokens succeeded once it was back")
	// Every node answers CLUSTERDOWN until the replica is promoted (the
	// default cluster-require-full-coverage): a call on a surviving
	// primary waits that out, it does not fail.
	require.Zero(t, f.other.failed, "calls on the surviving primaries' tokens failed")
	if acked {
		require.Empty(t, v.problems, "with the replica's acknowledgement, a failover must lose nothing")
	}
	for _, p := range v.problems {
		t.Logf("%s %s: problem: %s", m, variant, p)
	}
}

// failoverTimes are when, on the history's clock, the primary was to be
// killed, was gone, its replica had taken over (every live node
// agreeing), and the killed node was back as a replica, synced.
type failoverTimes struct{ kill, dead, promoted, rejoined int64 }

// tally counts calls by outcome.
type tally struct{ ok, uncertain, failed int }

func (c *tally) add(outcome string) {
	switch outcome {
	case outcomeOK:
		c.ok++
	case outcomeUncertain:
		c.uncertain++
	default:
		c.failed++
	}
}

func (c tally) String() string {
	return fmt.Sprintf("%d ok, %d uncertain, %d failed", c.ok, c.uncertain, c.failed)
}

// failoverFigures are what a history with a killed primary shows: how
// long the failover took, what the calls went through, and what the final
// counts lack. Unlike verdict's, its counts of Modify calls take in those
// that failed before their function ran (an acquire refused, say).
type failoverFigures struct {
	at            failoverTimes
	victimTokens  int            // tokens the killed primary served
	modifies      tally          // every Modify call that returned
	locks         tally          // every Lock, with its Unlock, that returned
	victim, other tally          // the calls on the killed primary's tokens, and on the others'
	firstNotOK    time.Duration  // after the kill, the return of the first call that did not succeed
	lastNotOK     time.Duration  // and of the last one
	backAfter     time.Duration  // after the kill, the return of the first call on its tokens made once it was gone that succeeded; -1 for none
	okAfterRejoin int            // calls on its tokens made after it was back that succeeded
	refused       int            // acquires refused for want of a replica's acknowledgement (lock.ErrNotAcquired)
	lost          int            // increments the final counts lack
	lostTokens    int            // tokens whose count lacks increments
	extra         int            // increments the final counts have beyond the uncertain calls
	errs          map[string]int // the errors of the calls that did not succeed, the token taken out
}

// figuresOf reads the figures off a verdict; owners maps each token to
// the primary that served it before the kill, victim is the killed one.
func figuresOf(v verdict, owners map[string]clusterNode, victim string, at failoverTimes) failoverFigures {
	f := failoverFigures{at: at, backAfter: -1, errs: map[string]int{}}
	onVictim := func(token string) bool { return owners[token] != nil && owners[token].Addr() == victim }
	for token := range owners {
		if onVictim(token) {
			f.victimTokens++
		}
	}
	notOK := 0
	for _, e := range v.history.ends {
		after := time.Duration(e.ret - at.kill)
		if e.lock {
			f.locks.add(e.outcome)
		} else {
			f.modifies.add(e.outcome)
		}
		if onVictim(e.token) {
			f.victim.add(e.outcome)
		} else {
			f.other.add(e.outcome)
		}
		if e.outcome != outcomeOK {
			if notOK == 0 {
				f.firstNotOK = after
			}
			notOK++
			f.lastNotOK = after
			f.errs[strings.ReplaceAll(e.err, e.token, "<token>")]++
			if e.ack {
				f.refused++
			}
			continue
		}
		if !onVictim(e.token) {
			continue
		}
		if e.call > at.dead && (f.backAfter < 0 || after < f.backAfter) {
			f.backAfter = after
		}
		if e.call > at.rejoined {
			f.okAfterRejoin++
		}
	}
	f.lost, f.lostTokens, f.extra = lostIncrements(v.history)
	return f
}

func (f failoverFigures) String() string {
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	s := fmt.Sprintf("primary gone %v after the kill began, replica promoted at %v, killed node back as a replica at %v; Modify calls %v; Lock calls %v; on the killed primary's %d tokens %v, on the others' %v",
		ms(time.Duration(f.at.dead-f.at.kill)), ms(time.Duration(f.at.promoted-f.at.kill)), ms(time.Duration(f.at.rejoined-f.at.kill)),
		f.modifies, f.locks, f.victimTokens, f.victim, f.other)
	if n := f.modifies.uncertain + f.modifies.failed + f.locks.uncertain + f.locks.failed; n > 0 {
		s += fmt.Sprintf("; the %d that did not succeed returned from %+v to %+v after the kill", n, ms(f.firstNotOK), ms(f.lastNotOK))
	}
	if f.backAfter >= 0 {
		s += fmt.Sprintf("; the first call on the killed primary's tokens made once it was gone to succeed returned %v after the kill", ms(f.backAfter))
	}
	return s + fmt.Sprintf("; %d made after its return succeeded; %d acquires refused for want of a replica's acknowledgement", f.okAfterRejoin, f.refused)
}

// commonErrors lists the n errors most calls returned, with their counts.
func (f failoverFigures) commonErrors(n int) []string { return commonErrors(f.errs, n) }

// commonErrors lists the n errors of counts that most calls returned,
// with their counts.
func commonErrors(counts map[string]int, n int) []string {
	errs := make([]string, 0, len(counts))
	for e := range counts {
		errs = append(errs, e)
	}
	sort.Slice(errs, func(i, j int) bool { return counts[errs[i]] > counts[errs[j]] })
	var out []string
	for _, e := range errs[:min(n, len(errs))] {
		out = append(out, fmt.Sprintf("%d× %s", counts[e], e))
	}
	return out
}

// lostIncrements compares the counts read at the end of a history with
// its Modify calls: lost is how many increments that succeeded the counts
// lack, over lostTokens tokens, and extra how many they hold beyond the
// calls that succeeded or may have.
func lostIncrements(h parsed) (lost, lostTokens, extra int) {
	ok, uncertain := map[string]int{}, map[string]int{}
	for _, op := range h.modifies {
		switch op.outcome {
		case outcomeOK:
			ok[op.token]++
		case outcomeUncertain:
			uncertain[op.token]++
		}
	}
	for _, r := range h.reads {
		if n := ok[r.token] - r.old; n > 0 {
			lost += n
			lostTokens++
		}
		if n := r.old - ok[r.token] - uncertain[r.token]; n > 0 {
			extra += n
		}
	}
	return lost, lostTokens, extra
}
