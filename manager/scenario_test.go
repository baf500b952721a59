package manager_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// scenario is one way of running the scenario that started baton.
type scenario struct {
	name string
	lock []lock.Option
	hold time.Duration
}

var scenarios = []scenario{
	{name: "fast"},
	{name: "fast-eval", lock: []lock.Option{lock.WithReleaseStyle(lock.ReleaseEval)}},
	{name: "fast+hold", hold: time.Second},
	{name: "fair", lock: []lock.Option{lock.WithFair()}},
	{name: "fair+hold", lock: []lock.Option{lock.WithFair()}, hold: time.Second},
}

// runScenario: instance A runs 1000 back-to-back Modify increments on one
// token; instance B, with its own connections, runs one Modify after A's
// 10th. It returns how many of A's modifications completed after B's
// request left B and before B's ran, and how long B waited.
func runScenario(t testing.TB, srv *redistest.Server, sc scenario) (passed int, waited time.Duration) {
	t.Helper()
	srv.Do(t, "FLUSHALL")
	var opts []manager.Option
	if sc.hold > 0 {
		opts = append(opts, manager.WithHold(sc.hold))
	}
	var done atomic.Int64  // A's completed modifications
	var asked atomic.Int64 // A's completed modifications when B's request left
	asked.Store(-1)
	// B's request is the first script call B writes: counting from there
	// leaves out the time B spends before its first byte leaves.
	tap := conn.WithTap(func(dir conn.Direction, p []byte) {
		if dir == conn.Write && bytes.Contains(p, []byte("EVALSHA")) {
			asked.CompareAndSwap(-1, done.Load())
		}
	})
	a := manager.New[counter](openLocker(t, srv, sc.lock...), opts...)
	b := manager.New[counter](openLocker(t, srv, append(sc.lock, lock.WithConnOptions(tap))...), opts...)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()

	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-start
		t0 := time.Now()
		require.NoError(t, b.Modify(ctx, "session", func(c *counter) error {
			passed = c.N - int(asked.Load())
			c.N++
			return nil
		}))
		waited = time.Since(t0)
	})
	for i := range 1000 {
		require.NoError(t, a.Modify(ctx, "session", increment))
		done.Add(1)
		if i == 9 {
			close(start)
		}
	}
	wg.Wait()
	v, err := a.Get(ctx, "session")
	require.NoError(t, err)
	require.Equal(t, 1001, v.N)
	return passed, waited
}

// TestTheOriginalScenario runs the scenario 20 times per mode and logs how
// often B was passed over and how long it waited. It asserts that no
// modification is lost (the count is always 1001) but, as yet, no bound on
// the passes: counted from the moment B calls Modify, they include A's
// modifications that land before B's request reaches the server, which the
// protocol cannot prevent, and the bounds the modes aim for (2 with
// fast+hold, 1 with fair and fair+hold) were exceeded in some runs.
func TestTheOriginalScenario(t *testing.T) {
	srv := redistest.Start(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var passes []int
			var waits []time.Duration
			for range 20 {
				p, w := runScenario(t, srv, sc)
				passes = append(passes, p)
				waits = append(waits, w)
			}
			slices.Sort(passes)
			slices.Sort(waits)
			t.Logf("scenario=%s passed=%v wait_p50=%v wait_max=%v", sc.name, passes, waits[len(waits)/2], waits[len(waits)-1])
		})
	}
}

// BenchmarkTheOriginalScenario reports, per mode, B's wait and how many of
// A's modifications passed it, averaged over b.N runs of the scenario.
func BenchmarkTheOriginalScenario(b *testing.B) {
	srv := redistest.Start(b)
	for _, sc := range scenarios {
		b.Run("mode="+sc.name, func(b *testing.B) {
			var passed int
			var waited time.Duration
			for b.Loop() {
				p, w := runScenario(b, srv, sc)
				passed += p
				waited += w
			}
			b.ReportMetric(float64(passed)/float64(b.N), "passed/op")
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N), "wait-µs/op")
		})
	}
}
