package latency_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/latency"
)

func TestEmptyRecorderGivesZeroSummary(t *testing.T) {
	r := latency.NewRecorder()
	require.Zero(t, r.Count())
	require.Equal(t, latency.Summary{}, r.Summary())
}

// TestPercentilesWithinPrecision: 1µs..10ms in 1µs steps, whose true
// percentiles are known; the histogram's are within 0.1% of them, and the
// extremes and mean are exact.
func TestPercentilesWithinPrecision(t *testing.T) {
	r := latency.NewRecorder()
	const n = 10000
	for i := 1; i <= n; i++ {
		r.Record(time.Duration(i) * time.Microsecond)
	}
	s := r.Summary()
	require.EqualValues(t, n, s.Count)
	require.Equal(t, time.Microsecond, s.Min)
	require.Equal(t, n*time.Microsecond, s.Max)
	require.Equal(t, (n+1)*time.Microsecond/2, s.Mean)
	for _, c := range []struct {
		got  time.Duration
		want time.Duration
	}{
		{s.P50, 5000 * time.Microsecond},
		{s.P90, 9000 * time.Microsecond},
		{s.P99, 9900 * time.Microsecond},
		{s.P999, 9990 * time.Microsecond},
	} {
		require.InEpsilon(t, float64(c.want), float64(c.got), 0.001)
	}
	require.LessOrEqual(t, s.P999, s.Max)
}

// TestPercentilesNeverAboveMax: the histogram answers with the top of a
// bucket; the summary never reports more than was recorded.
func TestPercentilesNeverAboveMax(t *testing.T) {
	r := latency.NewRecorder()
	const d = 1234567 * time.Nanosecond
	r.Record(d)
	s := r.Summary()
	for _, c := range s.Columns() {
		require.Equal(t, d, c.Value, c.Name)
	}
	require.Equal(t, d, s.Min)
	require.Equal(t, d, s.Mean)
}

func TestOutOfRangeValues(t *testing.T) {
	cases := []struct {
		name        string
		in          time.Duration
		wantMin     time.Duration
		wantMax     time.Duration
		wantClamped int64
	}{
		{"negative counts as zero", -time.Second, 0, 0, 0},
		{"below a microsecond", 10 * time.Nanosecond, 10 * time.Nanosecond, 10 * time.Nanosecond, 0},
		{"above Highest is clamped, max exact", 2 * latency.Highest, 2 * latency.Highest, 2 * latency.Highest, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := latency.NewRecorder()
			r.Record(c.in)
			s := r.Summary()
			require.EqualValues(t, 1, s.Count)
			require.Equal(t, c.wantMin, s.Min)
			require.Equal(t, c.wantMax, s.Max)
			require.Equal(t, c.wantClamped, s.Clamped)
			require.LessOrEqual(t, s.P999, s.Max)
		})
	}
}

func TestConcurrentRecord(t *testing.T) {
	r := latency.NewRecorder()
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r.Record(time.Duration(g*each+i+1) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	s := r.Summary()
	require.EqualValues(t, goroutines*each, s.Count)
	require.Equal(t, time.Microsecond, s.Min)
	require.Equal(t, goroutines*each*time.Microsecond, s.Max)
}
