//go:build !unix

package main

import (
	"errors"
	"time"
)

// cpuTime has no getrusage to read outside unix systems.
func cpuTime() (time.Duration, error) {
	return 0, errors.New("CPU time per operation is measured on unix systems only")
}
