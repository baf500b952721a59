package integration_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
)

var soakFlag = flag.Duration("soak", 0, "how long TestSoak runs, all four variants together (default 60s under -short, 5m otherwise)")

const (
	soakWorkers = 4 // processes, each defaultMix.goroutines goroutines
	// soakQuiet is the end of a soak that has no faults, so that every
	// worker ends its last calls on a working server.
	soakQuiet = 3 * time.Second
)

// soakFaults are the faults TestSoak picks from at random.
var soakFaults = []string{"restart", "pause", "pubsub-kill", "sigkill", "latency", "reset", "partition", "half-open"}

func soakDuration() time.Duration {
	switch {
	case *soakFlag > 0:
		return *soakFlag
	case testing.Short():
		return time.Minute
	}
	return 5 * time.Minute
}

// TestSoak runs 4 worker processes of 8 goroutines each, doing Modify
// increments and Lock+Unlock on 16 tokens through a TCP fault proxy, in
// both modes with and without the manager's hold, while random faults
// strike: server restarts and pauses past the TTL, killed subscribe
// connections, SIGKILLed workers (replaced at once), latency, resets,
// partitions and half-open connections. At the end it checks the whole
// history (see check) and logs the figures.
func TestSoak(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		variants := []mix{defaultMix, withFair(defaultMix), withHold(defaultMix), withHold(withFair(defaultMix))}
		each := soakDuration() / time.Duration(len(variants))
		for _, m := range variants {
			t.Run(m.String(), func(t *testing.T) { soak(t, b, m, each) })
		}
	})
}

func withHold(m mix) mix { m.hold = 50 * time.Millisecond; return m }

func soak(t *testing.T, b *backend, m mix, d time.Duration) {
	srv := b.start(t, spec{})
	proxy, err := faultproxy.Start(srv.Addr())
	require.NoError(t, err)
	defer proxy.Close()
	dir := t.TempDir()
	rec, err := newRecorder(dir, "faults")
	require.NoError(t, err)
	m.run = fmt.Sprintf("%x-", time.Now().UnixNano())
	until := time.Now().Add(d)
	generation := 0
	start := func(i int) *worker {
		generation++
		return startWorker(t, job{
			Addr: proxy.Addr(), Do: "workload", Fair: m.fair, Hold: int64(m.hold), TTL: int64(m.ttl), Run: m.run,
			Dir: dir, Name: fmt.Sprintf("w%d-%d", i, generation), Until: until.UnixNano(),
		})
	}
	workers := make([]*worker, soakWorkers)
	for i := range workers {
		workers[i] = start(i)
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("%s: seed %d", m, seed)
	for time.Until(until) > soakQuiet+2*time.Second {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		kind := soakFaults[rng.IntN(len(soakFaults))]
		rec.add(event{Kind: kindFault, Fault: kind})
		switch kind {
		case "restart":
			rec.add(event{Kind: kindResetStart})
			srv.Restart(t)
			rec.add(event{Kind: kindResetEnd})
		case "pause":
			pause := m.ttl * 3 / 2
			srv.Pause(t, pause)
			time.Sleep(pause)
		case "pubsub-kill":
			_, _ = redisKill(srv.Addr())
		case "sigkill":
			i := rng.IntN(len(workers))
			workers[i].kill()
			workers[i] = start(i)
		case "latency":
			proxy.SetLatency(time.Duration(5+rng.IntN(30)) * time.Millisecond)
			time.Sleep(time.Second)
			proxy.SetLatency(0)
		case "reset":
			proxy.Reset()
		case "partition":
			proxy.Blackhole(true)
			time.Sleep(time.Second)
			proxy.Blackhole(false)
		case "half-open":
			proxy.Sever()
		}
	}
	for _, w := range workers {
		require.NoError(t, w.wait(time.Until(until)+m.opTimeout+30*time.Second))
	}
	t.Logf("%s: %d processes over %v", m, generation, d)
	finishHistory(t, srv.Addr(), m, dir, rec)
}
