// Package runkeys gives a run of the command line's demo or bench a key
// prefix of its own, and deletes every key under it afterwards, so that a
// run against someone's server leaves it as it found it without ever
// touching their keys (no FLUSHALL).
//
// Concurrency: the functions keep no state; Remove is as safe for
// concurrent use as the connection it is given.
package runkeys
