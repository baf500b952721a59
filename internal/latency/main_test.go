package latency_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/batonlock/baton/internal/hangreport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(hangreport.Watch(m))
}
