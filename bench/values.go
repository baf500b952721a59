package main

import (
	"sync"
	"time"
)

// valueLog keeps every duration recorded, in microseconds, for the plots,
// which draw whole distributions where the tables give quantiles. It is
// safe for concurrent use.
type valueLog struct {
	mu sync.Mutex
	xs []float64 // guarded by mu
}

// Add records d.
func (v *valueLog) Add(d time.Duration) {
	v.mu.Lock()
	v.xs = append(v.xs, float64(d)/float64(time.Microsecond))
	v.mu.Unlock()
}

// Values returns a copy of what was recorded.
func (v *valueLog) Values() []float64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]float64(nil), v.xs...)
}
