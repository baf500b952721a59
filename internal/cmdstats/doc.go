// Package cmdstats reads the per-command counters of a Redis server's
// INFO commandstats and subtracts two readings, so that a benchmark can
// say how many commands the server ran for each operation it measured.
// It parses the text defensively: a server (or something posing as one)
// that sends garbage gets an error matching ErrMalformed, never a panic
// or a silently wrong count.
//
// What the counters count, as checked on redis-server 7.0.15 (see the
// package's tests): calls includes the commands that scripts run with
// redis.call (an EVALSHA whose script calls GET and DEL counts as three
// calls: evalsha, get, del) and commands that ran and failed
// (failed_calls); it leaves out commands refused before they ran
// (rejected_calls: wrong arity, ACL, OOM). The counters are the server's,
// for all of its clients: a reading taken on a shared server counts other
// clients' commands too. A reading's own INFO is counted by the next
// reading.
//
// Concurrency: the functions keep no state; a Stats is a map, safe for
// concurrent reads and owned by its caller for writes.
package cmdstats
