package main

import (
	"context"
	"fmt"
	"io"
)

// interleave runs measure once per name per round and returns
// out[round][index]. Round r starts with index r mod n and goes on in
// order, so that none always runs first, just after the machine was
// idle, or always after the same one. Each call carries the pprof label
// impl=<name>. what names the scenario in the progress lines and errors.
func interleave[T any](ctx context.Context, what string, names []string, rounds int, progress io.Writer,
	measure func(ctx context.Context, i int) (T, error)) ([][]T, error) {
	out := make([][]T, rounds)
	for r := range rounds {
		fmt.Fprintf(progress, "%s: round %d/%d\n", what, r+1, rounds)
		out[r] = make([]T, len(names))
		for j := range names {
			i := (r + j) % len(names)
			var err error
			labelled(ctx, names[i], func(ctx context.Context) {
				out[r][i], err = measure(ctx, i)
			})
			if err != nil {
				return nil, fmt.Errorf("%s, round %d, %s: %w", what, r+1, names[i], err)
			}
		}
	}
	return out, nil
}
