//go:build race

package redistest

// RaceEnabled reports whether the race detector is on: it makes sync.Pool
// drop items at random, so allocation counts are meaningful only without it.
const RaceEnabled = true
