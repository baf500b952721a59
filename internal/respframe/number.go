package respframe

import "math"

// MaxNumberLine caps the lines that carry a number or a flag (integer,
// length, boolean, null). The longest valid one, "-9223372036854775808",
// has 20 bytes; the margin admits leading zeros.
const MaxNumberLine = 64

// ParseInt parses a RESP integer: an optional minus sign and decimal
// digits, nothing else, within int64.
func ParseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	maxMagnitude := uint64(1<<63 - 1)
	if neg {
		maxMagnitude = 1 << 63
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (maxMagnitude-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
}

// AddCounts adds two element counts, saturating at math.MaxInt: a frame
// that declares that many could not be read to its end anyway.
func AddCounts(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
