package integration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// migrateBefore is how long the workload runs before the first
	// migration, migrateGap the pause before each of the others, and
	// migrateAfter how long it runs on after the last.
	migrateBefore = time.Second
	migrateGap    = 300 * time.Millisecond
	migrateAfter  = 2 * time.Second
	// migratedTokens is how many tokens' slots move.
	migratedTokens = 2
	// migrateOpen is how long each slot stays open before its keys move,
	// in the first round of migrations.
	migrateOpen = 1500 * time.Millisecond
)

// TestASlotMigratedDuringContention moves the slots of two contended
// tokens from primary to primary while two instances contend on tokens
// spread over a cluster of three primaries, in both modes: each slot, in
// turn with the other's, goes to each of the other two primaries and back
// home, its keys (the lock, its fence, the fair queue, the state) moved by
// MIGRATE while calls go on, which meet ASK, TRYAGAIN and MOVED (TRYAGAIN
// for 1.5s in the first round, whose slots stay open that long), and
// waiters listen on each new node. Every migration is a fault in the
// history. The history must pass every check: counts linearizable, no
// two leases held at once, fencing tokens increasing; and Modify calls on
// the moved tokens made after the last migration must succeed.
func TestASlotMigratedDuringContention(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		c := b.startCluster(t, 3, 0)
		for _, m := range []mix{defaultMix, withFair(defaultMix)} {
			t.Run(m.String(), func(t *testing.T) { slotsMigrated(t, c, m) })
		}
	})
}

func slotsMigrated(t *testing.T, c clusterUnderTest, m mix) {
	primaries := c.Nodes()[:3]
	m, owners := spread(t, c, m, 3)
	moved, slots := movingTokens(t, m)
	var took []time.Duration
	var settled int64
	v := contention(t, c.URL(), m, 2, func(rec *recorder) {
		time.Sleep(migrateBefore)
		// Each slot to the next primary, in turn with the others,
		// until each has been on every primary and is home again.
		for round := 1; round <= len(primaries); round++ {
			for i, slot := range slots {
				if len(took) > 0 {
					time.Sleep(migrateGap)
				}
				home := indexOf(t, primaries, owners[moved[i]])
				to := primaries[(home+round)%len(primaries)]
				// The first round leaves each slot open for a while
				// before its keys move, as a reshard of a slot with
				// many keys does: TRYAGAIN meanwhile.
				open := time.Duration(0)
				if round == 1 {
					open = migrateOpen
				}
				begun := now()
				rec.add(event{Kind: kindFault, Fault: "migration", Time: begun})
				c.MigrateSlot(t, slot, to, open)
				took = append(took, time.Duration(now()-begun))
			}
		}
		settled = now()
		for i, slot := range slots {
			require.Equal(t, owners[moved[i]].Addr(), c.Primary(t, slot).Addr(), "slot %d is home again", slot)
		}
		time.Sleep(migrateAfter)
	})
	f := migrationFiguresOf(v.history, moved)
	t.Logf("%s: slots %v of tokens %v migrated %d times, taking %v; longest call %v",
		m, slots, moved, len(took), roundAll(took), v.longestCall.Round(time.Millisecond))
	t.Logf("%s: Modify calls %v, Lock calls %v; on the moved tokens %v, on the others %v",
		m, f.modifies, f.locks, f.moved, f.other)
	for _, e := range commonErrors(f.errs, 5) {
		t.Logf("%s: error: %s", m, e)
	}
	for _, token := range moved {
		require.Positive(t, okAfterOn(v.history, token, settled), "no Modify on %s called after the last migration succeeded", token)
	}
}

// movingTokens picks the tokens of m whose slots move: the first ones,
// each on a slot of its own, and returns them with their slots.
func movingTokens(t *testing.T, m mix) ([]string, []int) {
	t.Helper()
	var tokens []string
	var slots []int
	seen := map[int]bool{}
	for i := 0; i < m.tokens && len(tokens) < migratedTokens; i++ {
		token := m.token(i)
		if slot := tokenSlot(token); !seen[slot] {
			seen[slot] = true
			tokens, slots = append(tokens, token), append(slots, slot)
		}
	}
	require.Len(t, tokens, migratedTokens, "tokens on slots of their own")
	return tokens, slots
}

// indexOf returns the position of n among nodes.
func indexOf(t *testing.T, nodes []clusterNode, n clusterNode) int {
	t.Helper()
	for i, o := range nodes {
		if o.Addr() == n.Addr() {
			return i
		}
	}
	t.Fatalf("%s is none of %d nodes", n.Addr(), len(nodes))
	return -1
}

// okAfterOn counts the Modify calls on token that succeeded, called after
// at.
func okAfterOn(p parsed, token string, at int64) int {
	n := 0
	for _, op := range p.modifies {
		if op.token == token && op.outcome == outcomeOK && op.call > at {
			n++
		}
	}
	return n
}

// migrationFigures are what a history with migrated slots shows: the
// calls by outcome, Modify calls counted whatever failed (an acquire
// refused, say), and the errors of those that did not succeed.
type migrationFigures struct {
	modifies, locks tally          // every Modify, and every Lock with its Unlock, that returned
	moved, other    tally          // the calls on the moved tokens, and on the others
	errs            map[string]int // the errors of the calls that did not succeed, the token taken out
}

func migrationFiguresOf(p parsed, moved []string) migrationFigures {
	f := migrationFigures{errs: map[string]int{}}
	isMoved := map[string]bool{}
	for _, token := range moved {
		isMoved[token] = true
	}
	for _, e := range p.ends {
		if e.lock {
			f.locks.add(e.outcome)
		} else {
			f.modifies.add(e.outcome)
		}
		if isMoved[e.token] {
			f.moved.add(e.outcome)
		} else {
			f.other.add(e.outcome)
		}
		if e.outcome != outcomeOK {
			f.errs[strings.ReplaceAll(e.err, e.token, "<token>")]++
		}
	}
	return f
}
