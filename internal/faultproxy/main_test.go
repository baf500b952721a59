package faultproxy_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
)

// TestMain fails the run if any goroutine outlives the tests: the Proxy
// and the test's echo server must each stop and wait for their own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}
