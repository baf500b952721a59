//go:build !linux

package main

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// arrivalOrder needs epoll, whose ready list keeps the order in which
// sockets received bytes (see probe_order_linux.go). Elsewhere the probe
// says it cannot measure, rather than guess from goroutine wake-ups,
// which invert the order more often than not.
type arrivalOrder struct{}

func newArrivalOrder(...int) (*arrivalOrder, error) {
	return nil, fmt.Errorf("%w: the probe reads the arrival order from Linux's epoll, and this is %s; run it from a Linux host or container",
		errCannotMeasure, runtime.GOOS)
}

func (*arrivalOrder) reset() error { return nil }

func (*arrivalOrder) first(context.Context, time.Duration) (int, error) { return -1, nil }

func (*arrivalOrder) close() {}
