// Package redisproc runs throwaway redis-server processes: [Start] finds
// redis-server on PATH and runs it on loopback ports that were free, in a
// temporary directory of its own, optionally with a unix socket and a TLS
// port whose certificate comes from a throwaway CA, or as a one-node Redis
// Cluster. It owns the process and every file it makes, and [Server.Stop]
// removes them all. It serves the command line's demo and, through package
// redistest, the tests of the other baton packages; it does not import
// package testing.
//
// Concurrency: every goroutine the package starts has an owner that stops it
// and waits for it. A Server's process-watching goroutine belongs to the
// Server and ends when the process does, which Stop and Restart wait for;
// the goroutine that thaws a paused Server ends when the pause does, and at
// the latest in Resume, Restart or Stop, which wait for it. Server methods
// are safe for concurrent use; Stop, Restart, Pause and Resume take turns.
package redisproc
