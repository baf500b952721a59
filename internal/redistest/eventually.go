package redistest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Eventually is require.Eventually for conditions that may fail the test
// themselves, such as those calling Server.Do: it polls cond every tick on
// the test's own goroutine, where FailNow is allowed, and fails the test
// if cond does not hold within wait.
func Eventually(t testing.TB, cond func() bool, wait, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if !time.Now().Before(deadline) {
			require.Fail(t, "Condition never satisfied", msgAndArgs...)
		}
		time.Sleep(tick)
	}
}
