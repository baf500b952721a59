package integration_test

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
)

// TestChaosThroughSentinels is TestChaos through a redis+sentinel URL, on
// a primary with two replicas watched by three sentinels, whose faults
// add, to those of one server (each on a data node picked at random, never
// a sentinel), a failover (the primary killed, a replica promoted by the
// sentinels, the killed node back as a replica of its successor) and a
// sentinel frozen for up to 2s, which clients that ask it must pass over.
// Its Lockers acknowledge every write on both replicas (WithReplicaAck(2),
// see killedPrimary: with one replica's, the sentinels may promote the
// other, and acknowledged releases and writes came back undone), so that
// every check holds; between a kill and the killed node's return as a
// replica, acquires are refused and releases uncertain. A failover
// forced with SENTINEL FAILOVER is not among the faults: the old primary
// stays a primary, with its clients, for about ten seconds, and releases
// that reach it in that time cannot be acknowledged by both replicas
// (which that failover needs, see forcedFailover), so their locks stay
// until their TTL, past a round's end
// (TestAFailoverThroughSentinelsDuringContention covers it). It runs in
// make integration, not under -short.
func TestChaosThroughSentinels(t *testing.T) {
	if testing.Short() {
		t.Skip("make integration runs it")
	}
	chaosBothModes(t, 4, func(t *testing.T, b *backend) chaosTarget {
		return sentinelTarget(t, b.startSentinels(t))
	})
}

// The faults a chaos round through sentinels adds, by weight, to those
// of one server, which strike a live data node picked at random.
var chaosSentinelFaults = []weighted[string]{
	{2, "failover"},       // the primary killed, a replica promoted, it back as a replica
	{2, "pause-sentinel"}, // a sentinel frozen for up to 2s
}

// sentinelTarget is a chaos target on s, whose methods that take t must
// run on the test's goroutine: the faulter's does.
func sentinelTarget(t *testing.T, s sentinelsUnderTest) chaosTarget {
	// When the last sentinel frozen thaws: a failover waits for it, so
	// that every sentinel can be asked what it names.
	var thawed time.Time
	return chaosTarget{
		addr: s.URL(),
		at: func(string) string {
			time.Sleep(time.Until(thawed))
			return s.Primary(t).Addr()
		},
		nodes: func() []string {
			var addrs []string
			for _, n := range s.Live() {
				addrs = append(addrs, n.Addr())
			}
			return addrs
		},
		acks: killedPrimary.acks, // both replicas
		// A release begun during a failover lands on the new primary if
		// it is promoted within the release timeout, else the lock waits
		// out its TTL: lock's promise, which the checks hold it to. A
		// failover here took 3.3s, and 14.5s where the sentinels' first
		// election failed (the next waits twice the failover-timeout of
		// 5s): the Lockers' release timeout outlasts that, as the README
		// tells users to make theirs outlast their failovers.
		releaseTimeout: 20 * time.Second,
		// A node that holds every command (CLIENT PAUSE ALL, see
		// faulter.outage) holds its sentinels' PINGs too, and one that
		// leaves a PING unanswered for down-after-milliseconds (1s) is
		// failed over: 600ms leaves the sentinels' own lateness room.
		maxOutage: 600 * time.Millisecond,
		describe: func() string {
			var b strings.Builder
			b.WriteString("the sentinels now:\n")
			for _, sn := range s.Sentinels() {
				v, err := sentinelView(sn)
				if err != nil {
					fmt.Fprintf(&b, "    %s: %v\n", sn, err)
					continue
				}
				fmt.Fprintf(&b, "    %s names %s, epoch %d, flags %s\n", sn, v.named, v.epoch, v.flags)
			}
			return b.String()
		},
		// The sentinels fail over on their own too, where a node the
		// round's load or faults slow misses their pings for longer than
		// down-after-milliseconds: the history shows each primary they
		// come to name, and when, whoever caused it.
		watch: func(stop <-chan struct{}, note func(string)) {
			var last sentinelNamed
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				newest := sentinelNamed{epoch: -1}
				for _, sn := range s.Sentinels() {
					if v, err := sentinelView(sn); err == nil && v.epoch > newest.epoch {
						newest = v.sentinelNamed
					}
				}
				if newest.epoch >= 0 && newest != last {
					if last.named != "" {
						note(fmt.Sprintf("named %s at epoch %d by a sentinel", newest.named, newest.epoch))
					}
					last = newest
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		},
		faults: chaosSentinelFaults,
		strike: map[string]func(f *faulter) string{
			"failover": func(f *faulter) string {
				// A replica paused so (Redis 7.0) acknowledges writes it has
				// read but not applied, which the promotion would lose.
				time.Sleep(max(time.Until(f.pausedUntil), time.Until(thawed)))
				old := s.KillPrimary(t)
				promoted := s.WaitFailover(t, old)
				s.RestartReplica(t, old)
				return fmt.Sprintf("%s killed, %s promoted", old.Addr(), promoted.Addr())
			},
			"pause-sentinel": func(f *faulter) string {
				time.Sleep(time.Until(thawed))
				i := f.rng.IntN(len(s.Sentinels()))
				d := time.Duration(100+f.rng.IntN(1900)) * time.Millisecond
				s.PauseSentinel(t, i, d)
				thawed = time.Now().Add(d)
				return fmt.Sprintf("%s for %v", s.Sentinels()[i], d)
			},
		},
	}
}

// sentinelNamed is the primary a sentinel names, and at which epoch.
type sentinelNamed struct {
	named string // host:port
	epoch int64
}

// sentinelState is what a sentinel says of the deployment's primary.
type sentinelState struct {
	sentinelNamed
	flags string
}

// sentinelView asks the sentinel at addr what it knows of the
// deployment's primary (SENTINEL MASTER).
func sentinelView(addr string) (sentinelState, error) {
	f, err := redisproc.SentinelMember{Addr: addr}.Master()
	if err != nil {
		return sentinelState{}, err
	}
	epoch, err := strconv.ParseInt(f["config-epoch"], 10, 64)
	if err != nil {
		return sentinelState{}, fmt.Errorf("sentinel %s: config-epoch %q: %w", addr, f["config-epoch"], err)
	}
	return sentinelState{sentinelNamed{net.JoinHostPort(f["ip"], f["port"]), epoch}, f["flags"]}, nil
}
