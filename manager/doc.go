// Package manager keeps state per token (a session, an order, ...) in Redis
// and modifies it under the token's lock, taken with package lock.
//
//	l, err := lock.Open(ctx, "redis://localhost:6379/0")
//	if err != nil {
//		return err
//	}
//	defer l.Close()
//
//	type Session struct{ Cart []string }
//	sessions := manager.New[Session](l)
//	defer sessions.Close()
//
//	err = sessions.Modify(ctx, "session:7f3a", func(s *Session) error {
//		s.Cart = append(s.Cart, "sku-1")
//		return nil
//	})
//
// # Modify
//
// [Manager.Modify] acquires the token's lock and reads the state in one
// write, hands the decoded state to the caller's function, and writes the
// result back and releases the lock in one script, sent with PING first
// in one write: an uncontended Modify costs two round trips. Missing state
// reaches the function as T's zero value. If the function returns an
// error or panics, nothing is written and the lock is released.
//
// The write-back happens only if the lease still owns the lock, checked in
// the same script ([lock.Lease.Commit]): a holder that lost its lease (its
// TTL ran out while its function ran, say) writes nothing, and Modify
// returns an error matching [lock.ErrNotHeld]. There is no window between
// the check and the write in which an update could be lost.
//
// [Manager.Get] reads the state without the lock: a snapshot that may be
// outdated by the time it returns.
//
// # Hold
//
// With [WithHold] and a duration d, the Manager keeps a token's lock and
// its state for up to d after each Modify: a back-to-back Modify on the
// same instance then costs one round trip, a fenced write that also
// extends the lock. No write ever waits for a later Modify: a Modify that
// returns nil has written its result.
//
// A hold never keeps others waiting for long. Waiters in other instances
// ask for the lock ([lock.Lease.Wanted]); a held write that finds a
// request hands the lock to the asker in the same script, and a hold that
// is asked for between modifications lets go at once, handing the lock
// over in the release. The holder, asking again, finds the lock held by
// the other instance and waits its turn. A hold also ends when d passes
// with no Modify, when the lease ends, when a Modify fails or panics, and
// on [Manager.Close].
//
// A held write lands only if the state is still in Redis: state that
// expired or was deleted meanwhile is not overwritten from the stale copy,
// and the function runs again on the zero value. So a function must only
// compute the new state from the one it is given.
//
// # State
//
// The state of token t lives at <prefix>{t}:state ([Manager.Key]), under
// the hash tag of the token's lock, so that one script can write it back
// and release the lock on Redis Cluster too. Every write refreshes its TTL.
// The defaults, each with its option:
//
//   - [WithKeyPrefix]: "baton:", the lock's default prefix.
//   - [WithStateTTL]: 1 hour.
//   - [WithCodec]: [JSON].
//   - [WithMaxStateSize]: [resp.DefaultMaxBulkLen] (64 MiB).
//   - [WithHold]: 0, no hold.
//
// # Errors
//
// The server's reply decides what Modify reports. An error is returned
// only when the write did not land, or when its outcome is unknown (an
// error matching [github.com/batonlock/baton/conn.UncertainError]); an
// error that does not match conn.UncertainError means that nothing was
// written. A write that landed
// is a success, even when the lease ran out by this process's clock while
// the reply was on its way, so a caller that retries on [lock.ErrNotHeld]
// never applies a change twice.
//
// [ErrUndecodable] reports stored state that the codec cannot decode,
// which is left as it is; [ErrInvalid] a bad argument or option, with
// nothing sent, whether this package or package lock refused it;
// [ErrClosed] a Modify once [Manager.Close] has begun, which wrote
// nothing, and any call on a Manager whose Locker is closed. ErrInvalid
// and ErrClosed are package lock's values, [lock.ErrInvalid] and
// [lock.ErrClosed]: either package's name matches either package's
// refusal.
//
// # Concurrency
//
// A Manager is safe for concurrent use. Local calls of Modify for one
// token take turns. With WithHold, the Manager owns one goroutine per
// token it holds, which lets the lock go; [Manager.Close] stops them and
// waits. Close ends the waits for a lock: a Modify waiting for one fails
// with ErrClosed, and runs no function. It does not wait for a function
// in progress: its Modify writes nothing, and fails with ErrClosed once
// the function returns. It waits for the write-backs on their way, for a
// second at most, and leaves one still stuck then (waiting out a
// failover, say) to the Locker's Close, which ends it: close the
// Manager, then its Locker, as the example above does with defer. Once
// Close has returned, the Manager writes nothing more, but for such a
// stuck write-back, and for a write-back whose caller's context ended
// with it on its way, either of which may land yet (see [Manager.Close]).
//
// How often another instance is passed over by back-to-back
// modifications, in each mode and with hold, is measured in
// docs/MEASUREMENTS.md in the module's repository.
package manager
