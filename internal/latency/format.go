package latency

import (
	"strconv"
	"time"
)

// Format writes d for people with three significant digits, the
// histogram's precision, in the largest unit that keeps it at or above 1:
// "850ns", "312µs", "1.24ms", "12.3ms", "2.05s". More digits would claim a
// precision the percentiles do not have.
func Format(d time.Duration) string {
	if d < 0 {
		// The most negative Duration has no positive twin: a nanosecond
		// less is the same at three digits.
		return "-" + Format(-max(d, -time.Duration(1<<63-1)))
	}
	// Rounding first lets 999.7µs become 1ms rather than 1000µs.
	d = roundSignificant(d, 3)
	for _, u := range []struct {
		size time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "µs"}} {
		if d >= u.size {
			return strconv.FormatFloat(float64(d)/float64(u.size), 'f', -1, 64) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// roundSignificant rounds d, not negative, to n significant digits, half
// up.
func roundSignificant(d time.Duration, n int) time.Duration {
	limit := time.Duration(1)
	for range n {
		limit *= 10
	}
	step := time.Duration(1)
	for d/step >= limit {
		step *= 10
	}
	if d > time.Duration(1<<63-1)-step/2 {
		return d / step * step // rounding up would overflow
	}
	return (d + step/2) / step * step
}
