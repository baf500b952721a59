package main

import "strconv"

// benchKeyBase starts the bench's key prefixes, each of them a run's own
// (runkeys.NewPrefix), deleted at the end of the run.
const benchKeyBase = "baton-bench:"

// benchKeys names n keys k0, k1, ...
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	return keys
}
