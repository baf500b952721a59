package redistest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
)

// TestMain fails the run if any goroutine outlives the tests: every one the
// package starts must have been stopped and waited for by its owner.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}
