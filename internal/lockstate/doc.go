// Package lockstate is how package manager reaches the parts of package
// lock that exist for state kept beside a lock: acquiring with commands in
// the same write, a fenced write-back carried by the release or an
// extension, and the Locker's command connection. They stay out of lock's
// exported API, which is for the users of a lock, and inside this module.
//
// Package lock registers its operations at init (Register); package
// manager fetches them, typed, with Get. Nothing else should use it.
//
// Concurrency: Register runs once, during package lock's initialisation,
// before any Get; the operations themselves are as safe for concurrent use
// as the Locker and Lease they are called on.
package lockstate
