package scenario_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/internal/scenario"
)

// startScenarioServer starts a server that reports writes of string keys
// (the "$" class of keyspace events), for counting in the server's order,
// besides the classes the fast mode turns on.
func startScenarioServer(t testing.TB) *redistest.Server {
	return redistest.Start(t, redistest.WithConfig(`notify-keyspace-events "K$gxe"`))
}

func settings(t testing.TB, srv *redistest.Server) scenario.Settings {
	t.Helper()
	counting, restore, err := scenario.PrepareCounting(context.Background(), srv.Addr)
	require.NoError(t, err)
	t.Cleanup(restore)
	require.Equal(t, scenario.ServerOrder, counting)
	return scenario.Settings{Addr: srv.Addr, Counting: counting, CostSamples: 10}
}

// TestTheOriginalScenario runs the scenario 20 times per configuration.
// Every run must end with the count at exactly 1001 and, where the
// configuration has a bound, with B passed over at most that often. It
// logs the distribution of the passes and of B's wait.
func TestTheOriginalScenario(t *testing.T) {
	srv := startScenarioServer(t)
	s := settings(t, srv)
	for _, cfg := range scenario.Configs {
		t.Run(cfg.Name, func(t *testing.T) {
			var passes []int
			var waits []time.Duration
			for range 20 {
				res, err := scenario.Run(context.Background(), s, cfg)
				require.NoError(t, err)
				require.True(t, res.Exact, "final count %d, want 1001", res.Final)
				require.Equal(t, scenario.ServerOrder, res.Counting)
				passes = append(passes, res.Passed)
				waits = append(waits, res.Waited)
			}
			slices.Sort(passes)
			slices.Sort(waits)
			t.Logf("scenario=%s passed=%v wait_p50=%v wait_max=%v", cfg.Name, passes, waits[len(waits)/2], waits[len(waits)-1])
			if cfg.Bound >= 0 {
				require.LessOrEqual(t, passes[len(passes)-1], cfg.Bound, "B was passed over more often than %s allows", cfg.Name)
			}
		})
	}
}

// TestTheScenarioCleansUp: a run against a user's server leaves no key
// behind, and puts back the keyspace events it turned on.
func TestTheScenarioCleansUp(t *testing.T) {
	srv := redistest.Start(t)
	before := srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").Elems[1].Str
	counting, restore, err := scenario.PrepareCounting(context.Background(), srv.Addr)
	require.NoError(t, err)
	require.Equal(t, scenario.ServerOrder, counting)
	for _, cfg := range scenario.Configs {
		res, err := scenario.Run(context.Background(), scenario.Settings{Addr: srv.Addr, Counting: counting, CostSamples: 3, Iterations: 30}, cfg)
		require.NoError(t, err)
		require.True(t, res.Exact)
		require.Positive(t, res.ModifyCost)
	}
	restore()
	require.Empty(t, srv.Do(t, "KEYS", "*").Elems)
	after := srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").Elems[1].Str
	require.NotContains(t, after, "$", "before the run: %q", before)
}

// TestTheScenarioStopsWithItsContext: a run cancelled midway returns the
// context's error and leaves no goroutine (goleak checks at exit).
func TestTheScenarioStopsWithItsContext(t *testing.T) {
	srv := startScenarioServer(t)
	for _, cfg := range scenario.Configs {
		ctx, cancel := context.WithCancel(context.Background())
		steps := 0
		_, err := scenario.Run(ctx, scenario.Settings{Addr: srv.Addr, Progress: func() {
			if steps++; steps == 50 {
				cancel()
			}
		}}, cfg)
		require.ErrorIs(t, err, context.Canceled, cfg.Name)
		cancel()
	}
	require.Empty(t, srv.Do(t, "KEYS", "*{session}:state").Elems)
}

// BenchmarkTheOriginalScenario reports, per configuration, B's wait and
// how many of A's modifications passed it, averaged over b.N runs.
func BenchmarkTheOriginalScenario(b *testing.B) {
	srv := startScenarioServer(b)
	s := settings(b, srv)
	for _, cfg := range scenario.Configs {
		b.Run("mode="+cfg.Name, func(b *testing.B) {
			var passed int
			var waited time.Duration
			for b.Loop() {
				res, err := scenario.Run(context.Background(), s, cfg)
				require.NoError(b, err)
				passed += res.Passed
				waited += res.Waited
			}
			b.ReportMetric(float64(passed)/float64(b.N), "passed/op")
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N), "wait-µs/op")
		})
	}
}
