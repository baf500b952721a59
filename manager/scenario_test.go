package manager_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
// 10th. It returns how many of A's modifications were written after B
// asked and before B's ran, and how long B waited.
func runScenario(t testing.TB, srv *redistest.Server, sc scenario) (passed int, waited time.Duration) {
	t.Helper()
	srv.Do(t, "FLUSHALL")
	var opts []manager.Option
	if sc.hold > 0 {
		opts = append(opts, manager.WithHold(sc.hold))
	}
	a := manager.New[counter](openLocker(t, srv, sc.lock...), opts...)
	bLocker := openLocker(t, srv, sc.lock...)
	b := manager.New[counter](bLocker, opts...)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()

	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		<-start
		t0 := time.Now()
		// Read the state on B's own connection just ahead of its Modify:
		// commands on one connection run in order, so A's modifications
		// counted from there are those that came after B asked.
		cn := bLocker.Client().Current()
		require.NotNil(t, cn)
		asked, err := cn.Start([]string{"GET", a.Key("session")})
		require.NoError(t, err)
		var seen int
		require.NoError(t, b.Modify(ctx, "session", func(c *counter) error {
			seen = c.N
			c.N++
			return nil
		}))
		waited = time.Since(t0)
		replies, err := asked.Wait(ctx)
		require.NoError(t, err)
		var before counter
		if !replies[0].IsNull() {
			require.NoError(t, json.Unmarshal([]byte(replies[0].Str), &before))
		}
		passed = seen - before.N
	})
	for i := range 1000 {
		require.NoError(t, a.Modify(ctx, "session", increment))
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
// the passes: the bounds the modes aim for (2 with fast+hold, 1 with fair
// and fair+hold) were exceeded in some runs of fast+hold and fair (see the
// package doc).
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
