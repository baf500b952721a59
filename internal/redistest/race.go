package redistest

import "testing"

// SkipUnderRace skips an allocation test under the race detector, which
// makes sync.Pool drop items at random and so makes allocation counts vary;
// make test runs the allocation tests once more without it.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("the race detector makes allocation counts vary; make test runs this without it")
	}
}
