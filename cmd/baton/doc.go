// Command baton runs baton's lock where a person can watch it.
//
//	baton demo     the scenario that started baton, on every configuration
//	baton probe    how a server orders replies and notifications on release
//	baton bench    lock or Modify throughput and latency
//	baton inspect  who holds a lock, for how long, and who waits for it
//
// Every command takes --help. Flags may come before or after a command's
// arguments, in any order (baton inspect KEY --addr ADDR); "--" ends
// them, so that an argument beginning with "-" can follow.
//
// Exit codes: 0 on success, 1 when the command ran and failed (one line
// naming the server and what failed), 2 for a mistake on the command
// line, 130 when interrupted (after releasing every lease and removing
// every throwaway server it started); inspect --watch, which runs until
// it is interrupted, exits 0 then.
package main
