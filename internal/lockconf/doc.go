// Package lockconf holds the settings of a lock.Locker. They live here, not
// in package lock, so that code inside this module (the manager's tests,
// the demo, the benchmarks) can set the few that users have no business
// with, such as the release style that reproduces the problem baton fixes,
// while lock's exported options stay the ones a service needs.
//
// Concurrency: Options is a plain value, filled in before a Locker is made
// and read-only afterwards.
package lockconf
