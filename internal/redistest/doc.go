// Package redistest gives tests of the other baton packages something to
// talk to: throwaway redis-server processes ([Start]) and Redis Clusters of
// them ([StartCluster]), run by package redisproc and tied to the test, with
// methods that fail the test instead of returning errors; and a scripted
// fake RESP server ([NewFake]) for the faults a real server cannot be made
// to produce on cue: a reply that never comes, a connection cut
// mid-exchange, bytes that are not RESP at all. It owns the servers,
// listeners, connections and temporary files it creates, and removes every
// one of them at the test's cleanup.
//
// Concurrency: every goroutine the package starts has an owner that stops it
// and waits for it. A Server's goroutines are redisproc's, ended by Stop,
// which the test's cleanup calls, and a pause's also by the cleanup that
// Pause registers; a Cluster's are its nodes', ended by its Stop, which the
// test's cleanup calls; a Fake's accept loop and its per-connection handler
// goroutines belong to the Fake and end in its cleanup, which closes the
// listener and every connection and then waits, so a handler blocked in a
// read returns. Server, Cluster and Fake methods are safe for concurrent
// use, except that those taking a testing.TB must run on the test's
// goroutine, as t.Fatal requires. A Session belongs to its handler's
// goroutine; only Cut may also be called from elsewhere.
package redistest
