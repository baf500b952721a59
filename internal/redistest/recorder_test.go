package redistest_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// recorder is a testing.TB that records failures and skips instead of
// acting on them, so tests can check what the package reports. Everything
// it does not override goes to the real test.
type recorder struct {
	testing.TB

	mu       sync.Mutex
	errors   []string // from Errorf, possibly from a fake's handler goroutines
	fatal    string
	skip     string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatal, Fatalf, Skip and Skipf end the calling goroutine, as the real
// ones do.
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) { r.Skipf("%s", fmt.Sprint(args...)) }

func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skip = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *recorder) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

// record runs fn with a recorder on a goroutine of its own, since Fatalf
// and Skipf end the goroutine they are called on, and waits for it.
func record(t *testing.T, fn func(r *recorder)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

// runCleanups runs the recorded cleanups, last registered first.
func (r *recorder) runCleanups() {
	r.mu.Lock()
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
}
