package latency_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/latency"
)

func TestColumnsNamesAndOrder(t *testing.T) {
	s := latency.Summary{P50: 1, P90: 2, P99: 3, P999: 4, Max: 5}
	var names []string
	for i, c := range s.Columns() {
		names = append(names, c.Name)
		require.Equal(t, time.Duration(i+1), c.Value)
	}
	require.Equal(t, []string{"p50", "p90", "p99", "p99.9", "max"}, names)
}

// TestSummaryJSON: the shape other programs read, and its round trip.
func TestSummaryJSON(t *testing.T) {
	s := latency.Summary{
		Count: 42, Min: 1500 * time.Nanosecond, Mean: 2 * time.Millisecond,
		P50: 312 * time.Microsecond, P90: 540 * time.Microsecond, P99: 1200 * time.Microsecond,
		P999: 3400 * time.Microsecond, Max: 12345678 * time.Nanosecond,
	}
	data, err := json.Marshal(s)
	require.NoError(t, err)
	require.JSONEq(t, `{"count":42,"min_us":1.5,"mean_us":2000,"p50_us":312,"p90_us":540,"p99_us":1200,"p99_9_us":3400,"max_us":12345.678}`, string(data))

	var back latency.Summary
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, s, back)

	s.Clamped = 3
	data, err = json.Marshal(s)
	require.NoError(t, err)
	require.Contains(t, string(data), `"clamped":3`)
}

func TestSummaryJSONRefusesGarbage(t *testing.T) {
	var s latency.Summary
	require.Error(t, json.Unmarshal([]byte(`{"p50_us":"fast"}`), &s))
}

func TestFormat(t *testing.T) {
	cases := []struct {
		in   time.Duration
		want string
	}{
		{0, "0ns"},
		{850 * time.Nanosecond, "850ns"},
		{999 * time.Nanosecond, "999ns"},
		{999600 * time.Nanosecond, "1ms"},
		{312 * time.Microsecond, "312µs"},
		{312400 * time.Nanosecond, "312µs"},
		{1236 * time.Microsecond, "1.24ms"},
		{12345 * time.Microsecond, "12.3ms"},
		{2049 * time.Millisecond, "2.05s"},
		{90 * time.Minute, "5400s"},
		{-1500 * time.Microsecond, "-1.5ms"},
		{time.Duration(1<<63 - 1), "9220000000s"},
		{time.Duration(-1 << 63), "-9220000000s"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, latency.Format(c.in), "%d", int64(c.in))
	}
}
