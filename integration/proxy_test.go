package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/faultproxy"
)

// TestCallsThroughAFaultyNetwork puts a TCP fault proxy between two
// contending instances and the server, and goes through latency, resets,
// a server that refuses connections, a partition that heals, and
// connections left half-open for good: every call succeeds or fails cleanly,
// within its context, the history stays linearizable, and the instances
// work again once the network does. goleak (TestMain) checks that
// nothing is left running.
func TestCallsThroughAFaultyNetwork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		for _, m := range []mix{defaultMix, withFair(defaultMix)} {
			t.Run(m.String(), func(t *testing.T) {
				srv := b.start(t, spec{})
				proxy, err := faultproxy.Start(srv.Addr())
				require.NoError(t, err)
				defer proxy.Close()
				m.opTimeout = 3 * time.Second
				var healed int64
				v := contention(t, proxy.Addr(), m, 2, func(rec *recorder) {
					fault := func(kind string) { rec.add(event{Kind: kindFault, Fault: kind}) }
					time.Sleep(300 * time.Millisecond)

					fault("latency")
					proxy.SetLatency(20 * time.Millisecond)
					time.Sleep(time.Second)
					proxy.SetLatency(0)

					for range 3 {
						fault("reset")
						proxy.Reset()
						time.Sleep(300 * time.Millisecond)
					}

					fault("refused")
					proxy.Refuse(true)
					proxy.Reset()
					time.Sleep(500 * time.Millisecond)
					proxy.Refuse(false)
					time.Sleep(300 * time.Millisecond)

					fault("partition")
					proxy.Blackhole(true)
					time.Sleep(time.Second)
					proxy.Blackhole(false) // heals: the held bytes go through
					time.Sleep(300 * time.Millisecond)

					fault("half-open")
					proxy.Sever()
					time.Sleep(m.opTimeout + time.Second)
					healed = now()
					time.Sleep(2 * time.Second)
				})
				require.LessOrEqual(t, v.longestCall, m.opTimeout+time.Second, "a call outlived its context")
				require.Positive(t, okAfter(v.history, healed), "no Modify succeeded after the network healed")
			})
		}
	})
}
