package latency

import (
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The histogram's geometry, in nanoseconds.
const (
	// Lowest is the smallest latency the histogram tells apart from zero.
	Lowest = time.Microsecond
	// Highest is the largest latency the histogram holds; a longer one is
	// recorded as Highest and counted in Summary.Clamped.
	Highest = 10 * time.Minute
	// SignificantDigits is the histogram's precision: 3 digits keep every
	// percentile within 0.1% of the value it stands for.
	SignificantDigits = 3
)

// Recorder collects latencies.
type Recorder struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram // guarded by mu
	// The exact extremes, count, sum and clamped count: the histogram
	// keeps its values only to its precision, and the extremes are
	// reported exactly. All guarded by mu.
	min, max time.Duration
	count    int64
	sum      time.Duration
	clamped  int64
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{h: hdrhistogram.New(int64(Lowest), int64(Highest), SignificantDigits)}
}

// Record adds one latency. A negative d (a clock that went back between
// two readings without a monotonic part) counts as zero; one above
// Highest counts as Highest.
func (r *Recorder) Record(d time.Duration) {
	d = max(d, 0)
	v := d
	clamped := v > Highest
	if clamped {
		v = Highest
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// RecordValue fails only outside the histogram's range, which v is
	// not: the error carries nothing.
	_ = r.h.RecordValue(int64(v))
	if r.count == 0 || d < r.min {
		r.min = d
	}
	r.max = max(r.max, d)
	r.count++
	r.sum += d
	if clamped {
		r.clamped++
	}
}

// Count returns how many latencies were recorded.
func (r *Recorder) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Summary returns the figures of the latencies recorded so far. An empty
// Recorder gives a zero Summary.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		return Summary{}
	}
	// The histogram answers with the highest value equivalent to a
	// bucket, which can lie above the exact maximum.
	at := func(p float64) time.Duration { return min(time.Duration(r.h.ValueAtPercentile(p)), r.max) }
	return Summary{
		Count:   r.count,
		Min:     r.min,
		Mean:    r.sum / time.Duration(r.count),
		P50:     at(50),
		P90:     at(90),
		P99:     at(99),
		P999:    at(99.9),
		Max:     r.max,
		Clamped: r.clamped,
	}
}
