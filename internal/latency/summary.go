package latency

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Summary is what a benchmark reports of its latencies.
type Summary struct {
	Count int64
	Min   time.Duration
	Mean  time.Duration
	P50   time.Duration
	P90   time.Duration
	P99   time.Duration
	P999  time.Duration // p99.9
	Max   time.Duration
	// Clamped counts latencies above Highest, recorded as Highest in the
	// histogram (Max is still exact).
	Clamped int64
}

// Column is one figure of a table row: its heading and its value.
type Column struct {
	Name  string
	Value time.Duration
}

// Columns returns the percentiles and the maximum, in the order and with
// the headings tables use: p50, p90, p99, p99.9, max.
func (s Summary) Columns() []Column {
	return []Column{{"p50", s.P50}, {"p90", s.P90}, {"p99", s.P99}, {"p99.9", s.P999}, {"max", s.Max}}
}

// summaryJSON is Summary on the wire: durations in microseconds, as
// numbers, so that a reader needs no Go duration parser.
type summaryJSON struct {
	Count   int64   `json:"count"`
	Min     float64 `json:"min_us"`
	Mean    float64 `json:"mean_us"`
	P50     float64 `json:"p50_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us"`
	P999    float64 `json:"p99_9_us"`
	Max     float64 `json:"max_us"`
	Clamped int64   `json:"clamped,omitempty"`
}

// MarshalJSON writes s as {"count":n,"min_us":..,"mean_us":..,"p50_us":..,
// "p90_us":..,"p99_us":..,"p99_9_us":..,"max_us":..}, with "clamped" when
// it is not zero. Microseconds keep three decimals: the nanosecond.
func (s Summary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{
		Count: s.Count, Min: micros(s.Min), Mean: micros(s.Mean),
		P50: micros(s.P50), P90: micros(s.P90), P99: micros(s.P99), P999: micros(s.P999),
		Max: micros(s.Max), Clamped: s.Clamped,
	})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(data []byte) error {
	var w summaryJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("latency: summary: %w", err)
	}
	*s = Summary{
		Count: w.Count, Min: fromMicros(w.Min), Mean: fromMicros(w.Mean),
		P50: fromMicros(w.P50), P90: fromMicros(w.P90), P99: fromMicros(w.P99), P999: fromMicros(w.P999),
		Max: fromMicros(w.Max), Clamped: w.Clamped,
	}
	return nil
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func fromMicros(us float64) time.Duration {
	return time.Duration(math.Round(us * float64(time.Microsecond)))
}
