package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile written to path, or does nothing
// when path is empty. The returned function stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return nil
	}, nil
}

// labelled runs f with the pprof label impl=name on its goroutine. The
// goroutines an implementation started when it opened (connection
// readers, subscribers) do not carry it: their samples are unlabelled.
func labelled(ctx context.Context, name string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("impl", name), f)
}
