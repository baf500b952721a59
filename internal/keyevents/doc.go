// Package keyevents reads Redis's notify-keyspace-events setting: which
// of the flags a caller needs it lacks. The subscriber, the probe and the
// demo's counting each need different flags, and all read the setting the
// same way, alias 'A' included.
//
// Concurrency: pure functions.
package keyevents
