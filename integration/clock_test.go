package integration_test

import "golang.org/x/sys/unix"

// now reads CLOCK_MONOTONIC, in nanoseconds: one clock for every process
// of the machine, which, unlike the wall clock, no adjustment steps back,
// so that the history's order of events is the order they happened in.
func now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err) // CLOCK_MONOTONIC is always there on the systems the suite runs on
	}
	return ts.Nano()
}
