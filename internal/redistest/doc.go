// Package redistest gives tests of the other baton packages something to
// talk to: throwaway redis-server processes ([Start]), each on its own
// loopback ports and temporary directory, optionally with a unix socket and
// a TLS port, or as a one-node Redis Cluster; and a scripted fake RESP
// server ([NewFake]) for the faults a real server cannot be made to produce
// on cue: a reply that never comes, a connection cut mid-exchange, bytes
// that are not RESP at all. It owns the processes, listeners, connections
// and temporary files it creates, and removes every one of them at the
// test's cleanup.
//
// Concurrency: every goroutine the package starts has an owner that stops it
// and waits for it. A Server's process-watching goroutine belongs to the
// Server and ends in Stop, which the test's cleanup calls; the goroutine
// that thaws a paused Server ends at the latest at the cleanup that Pause
// registers, which waits for it; a Fake's accept loop and its per-connection
// handler goroutines belong to the Fake and end in its cleanup, which closes
// the listener and every connection and then waits, so a handler blocked in
// a read returns. Server and Fake methods are safe for concurrent use,
// except that those taking a testing.TB must run on the test's goroutine, as
// t.Fatal requires. A Session belongs to its handler's goroutine; only Cut
// may also be called from elsewhere.
package redistest
