// Package manager keeps state per token (a session, an order, ...) in Redis
// and modifies it under the token's lock.
//
// Modify acquires the token's lock and reads the state in one write, hands
// the decoded state to the caller's function, and writes the result back
// and releases the lock in one script, sent with PING first in one write:
// an uncontended Modify costs two round trips. The write-back happens only
// if this lease still owns the lock, checked inside the same script, so a
// holder that lost its lease (its TTL ran out while its function ran, say)
// writes nothing, and Modify reports the loss; there is no window between
// the check and the write in which an update could be lost. State lives at
// <prefix>{token}:state, under the lock's hash tag, with a TTL refreshed by
// every write.
//
// Concurrency: a Manager is safe for concurrent use and starts no
// goroutines of its own; it leans on the Locker's.
package manager
