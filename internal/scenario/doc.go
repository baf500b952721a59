// Package scenario runs the scenario that started baton: instance A
// modifies one token's state back to back, instance B modifies it once
// after A's tenth, and the run counts how many of A's modifications passed
// B in the server's order. The manager's test asserts bounds on it and
// `baton demo` prints it, from this one implementation.
//
// Besides baton's modes it runs the naive design baton improves on: a
// SET NX PX lock released by a compare-and-delete EVAL (optionally after
// a PING in the same write), whose waiters listen to keyspace
// notifications and take no turn.
//
// Concurrency: Run starts B's goroutine and an observer connection and
// waits for both before it returns; it is safe to call from several
// goroutines on distinct servers or prefixes.
package scenario
