package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestARestartMidContentionLosesNoWrite restarts the server, without
// persistence, while two instances contend on every token: every lock
// and count vanishes, the fenced write-back refuses holders from before,
// waiters recover, and the history, the restart in it, stays
// linearizable, with fencing tokens still increasing.
func TestARestartMidContentionLosesNoWrite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		for _, m := range []mix{defaultMix, withFair(defaultMix)} {
			t.Run(m.String(), func(t *testing.T) {
				srv := b.start(t, spec{})
				var restarted int64
				v := contention(t, srv.Addr(), m, 2, func(rec *recorder) {
					time.Sleep(time.Second)
					rec.add(event{Kind: kindResetStart})
					srv.Restart(t)
					rec.add(event{Kind: kindResetEnd})
					restarted = now()
					rec.add(event{Kind: kindFault, Fault: "restart"})
					time.Sleep(2 * time.Second)
				})
				require.Positive(t, okAfter(v.history, restarted), "no Modify called after the restart succeeded")
			})
		}
	})
}

func withFair(m mix) mix { m.fair = true; return m }
