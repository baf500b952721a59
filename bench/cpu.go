//go:build unix

package main

import (
	"fmt"
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process has used so far, user and
// system, all threads. The redis-server the bench may have started is a
// child process and is not counted.
func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
