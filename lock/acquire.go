package lock

// What the acquires of both modes share: Lock and TryLock, which pick the
// mode's (fast.go, fair.go), the claim an acquire makes, and the
// registration of its waiter.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// Lock acquires the lock for key, waiting as long as ctx allows, and
// returns the lease that holds it.
//
// In fast mode (the default) a Lock that finds the lock held asks the
// holder to let go, and the holder's release hands the lock to the first
// that asked; in fair mode (WithFair) it queues, and releases hand the
// lock on in the order of arrival. The package doc's sections say what
// each mode promises.
//
// It returns an error matching ErrInvalid for an empty or malformed key,
// ErrClosed once Close has begun, ctx's error if ctx ends first, and
// ErrNotAcquired where WithReplicaAck's replicas did not acknowledge the
// acquire (which was undone). A Lock that gives up leaves no lock held and
// no request standing: what it may have taken is released in the
// background.
func (l *Locker) Lock(ctx context.Context, key string) (*Lease, error) {
	ls, _, err := l.lock(ctx, key, nil)
	return ls, err
}

func (l *Locker) lock(ctx context.Context, key string, cmds [][]string) (*Lease, []resp.Value, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, nil, err
	}
	defer l.exit()
	c := l.newClaim(key)
	c.began(ctx, observe.Lock)
	ls, replies, err := c.lockAndDo(ctx, cmds)
	c.ended(observe.Lock, ls, err)
	return ls, replies, err
}

// lockAndDo is Lock's work, with cmds sent after the acquire.
func (c *claim) lockAndDo(ctx context.Context, cmds [][]string) (*Lease, []resp.Value, error) {
	l := c.l
	var a attempt
	var err error
	if l.opts.Fair {
		a, err = c.lockFair(ctx, cmds)
	} else {
		a, err = c.lockFast(ctx, cmds)
	}
	if err != nil || len(cmds) == 0 || len(a.replies) == len(cmds) {
		return a.lease, a.replies, err // the commands rode with the acquire
	}
	replies, err := c.cmd.DoMulti(ctx, cmds...)
	if err != nil {
		// With ctx, so that the caller waits no longer than it asked:
		// a release that ctx cuts short goes on in the background.
		_ = a.lease.unlock(ctx, nil, observe.Released)
		return nil, nil, c.errorf("after acquiring", err)
	}
	return a.lease, replies, nil
}

// TryLock makes one attempt to acquire the lock for key and returns
// ErrNotAcquired if another owner holds it, or if the attempt's reply came
// only after the lease's TTL had run out (then an error matching
// conn.UncertainError instead, if releasing the lock it took did not end
// cleanly). In fair mode a queued waiter counts as a holder: TryLock does
// not jump the queue.
func (l *Locker) TryLock(ctx context.Context, key string) (*Lease, error) {
	if err := l.startAcquire(ctx, key); err != nil {
		return nil, err
	}
	defer l.exit()
	c := l.newClaim(key)
	c.began(ctx, observe.TryLock)
	ls, err := c.try(ctx)
	c.ended(observe.TryLock, ls, err)
	return ls, err
}

// try is TryLock's work.
func (c *claim) try(ctx context.Context) (*Lease, error) {
	var a attempt
	var err error
	if c.l.opts.Fair {
		a, err = c.fairAttempt(ctx, nil, nil, 0)
	} else {
		a, err = c.tryFast(ctx, askNot, nil)
	}
	switch {
	case a.late:
		return nil, c.errorf("try", fmt.Errorf("%w: the acquire's reply came after the lease's TTL had run out", ErrNotAcquired))
	case a.lease == nil && err == nil:
		return nil, c.errorf("try", fmt.Errorf("%w: held by another owner", ErrNotAcquired))
	}
	return a.lease, err
}

// startAcquire checks a Lock or TryLock call and counts it in (see enter).
func (l *Locker) startAcquire(ctx context.Context, key string) error {
	if err := checkCall(ctx, l.opts.Prefix, key); err != nil {
		return err
	}
	if !l.enter() {
		return errLockerClosed
	}
	return nil
}

// claim is one owner's claim on one lock: the key, its names in Redis, and
// the random owner token that the lock holds while the claim has it. One
// Lock call is one claim, whatever number of attempts it makes.
type claim struct {
	l     *Locker
	key   string
	names keyNames
	owner string    // 130 random bits (see claimStrings)
	cmd   commander // where the lock's commands go
	// asker is "<waiter-id> <channel>" where a hand-off reaches this
	// claim's waiter; set by a fast-mode Lock before it first asks.
	asker string
	// asked is set once a fast-mode attempt of the claim has asked, and
	// firstAsk just before that attempt (or a fair-mode claim's first
	// attempt that queued) was sent: every request or queue entry of the
	// claim was made after it, and so every hand-off to it. Only the
	// goroutine of its Lock uses them.
	asked    bool
	firstAsk time.Time
	// heardHandOff is set once a hand-off's message with the claim's
	// owner token came (see handedOver), or an attempt acquired too late
	// (see acquired): the claim takes no lease from a message after
	// that. Only the goroutine of its Lock uses it.
	heardHandOff bool
	// queued is set once a fair attempt may have queued the claim; only
	// the goroutine of its Lock or TryLock uses it.
	queued bool
	// listener is a fair-mode claim's registration for hand-offs while
	// it waits, kept here so that it costs no allocation more; only the
	// goroutine of its Lock or TryLock uses it.
	listener fairListener
	// call is the number of the claim's Lock or TryLock call, callStart
	// when it began (see began), waited whether the claim has asked (see
	// step), retried whether an attempt of it that did not ask failed to
	// acquire (see how), and handed whether its waiter read a hand-off's
	// message (see tookMessage): what the Locker's observers are told.
	// Only the goroutine of its Lock or TryLock writes them, before the
	// lease, if any, is granted; call is zero where nobody observes.
	call      uint64
	callStart time.Time
	waited    bool
	retried   bool
	handed    bool
	// lease is the Lease that the claim lives in, made with it so that a
	// claim that acquires costs no allocation more; it is given out only
	// once acquired.
	lease *Lease
}

func (l *Locker) newClaim(key string) *claim {
	names, owner := l.claimStrings(key, newOwner)
	ls := &Lease{c: claim{l: l, key: key, names: names, owner: owner, cmd: l.nodes.commander(names.lock)}}
	ls.c.lease = ls
	return &ls.c
}

// errorf wraps err with the claim's key and the operation, as every error
// of the package is.
func (c *claim) errorf(op string, err error) error {
	if _, ok := c.l.nodes.(single); ok && errors.Is(err, resp.Moved) {
		// The commonest mistake on a cluster: a node's own address.
		return fmt.Errorf("lock %q: %s: %w (the server is a Redis Cluster node: open the Locker with a redis+cluster:// URL)", c.key, op, err)
	}
	return fmt.Errorf("lock %q: %s: %w", c.key, op, err)
}

// attempt is what one acquire attempt came to, when it did not fail.
type attempt struct {
	lease   *Lease       // nil unless acquired
	replies []resp.Value // the replies of the commands that rode with an acquire that won
	// retryIn, for a fast attempt that found the lock held, is how long
	// the holder has left: when to look again at the latest.
	retryIn time.Duration
	// lastToken, for a fair attempt that did not acquire, is the last
	// fencing token handed out.
	lastToken uint64
	// late is set for an attempt that acquired, but whose reply came
	// after the lease had run out (see acquired).
	late bool
}

// acquired makes the lease that an acquire sent at start won, with
// token, unless its reply came after the lease's deadline (a WAIT for a
// replica slow to acknowledge, a connection that stalled with the reply
// on its way, a TTL shorter than a round trip): such a lease is over
// before Lock could return it, and the lock may be another owner's by
// then. The attempt counts as one that did not acquire, and is late:
// confirmed releases its lock, in case it still stands, before Lock tries
// again; TryLock says why it did not acquire. The claim takes no lease
// from a hand-off's message after that: the attempt may have found the
// lock handed to it, and confirmed the hand-off, so that the message that
// told of it, if it comes or is read later, is of a lock the claim let
// go.
func (c *claim) acquired(token uint64, start time.Time, queuedAfter uint64) (attempt, error) {
	if !time.Now().Before(leaseEnd(start, c.l.opts.TTL)) {
		c.heardHandOff = true // see handedOver
		return attempt{late: true}, nil
	}
	ls := c.newLease(token, start, queuedAfter)
	if ls == nil {
		c.releaseInBackground()
		return attempt{}, errLockerClosed
	}
	return attempt{lease: ls}, nil
}

// confirmed completes an attempt a, read from the acquire script's run r:
// one that won gets the replies of the commands that rode with it, unless
// too few replicas acknowledged it (WithReplicaAck), when it is undone.
// The lock of a late attempt (see acquired) is released here, before the
// claim sends anything more (see releaseLate).
func (c *claim) confirmed(ctx context.Context, a attempt, r scriptResult, err error) (attempt, error) {
	if a.late {
		if err := c.releaseLate(ctx); err != nil {
			return attempt{}, err
		}
		return a, nil
	}
	if a.lease == nil {
		return a, err
	}
	if r.short != nil {
		return attempt{}, c.unacknowledged(ctx, a.lease, r.short)
	}
	a.replies = r.after
	return a, nil
}

// releaseLate releases the lock that a late attempt took (see acquired),
// and reports whether the claim may go on: only if the release ended
// cleanly, the lock released or found gone. A release still on its way,
// or sent again later (an uncertain outcome, a release that too few
// replicas acknowledged and that is resent until they do), would find
// the lock the claim's own if its next attempt, with the same owner
// token, took it meanwhile, and release it under the lease that Lock
// returned. So otherwise the claim stops, with an error that matches
// conn.UncertainError, and the release goes on in the background where
// the context cut it short: nothing of the claim's follows it.
func (c *claim) releaseLate(ctx context.Context) error {
	by := time.Now().Add(c.l.opts.ReleaseTimeout)
	err := c.releaseNow(boundedBy(ctx, by), by, nil, releasePingEval)
	if err == nil || errors.Is(err, ErrNotHeld) {
		return nil
	}
	if ctx.Err() != nil {
		c.releaseInBackground()
	}
	return c.errorf("acquire", &conn.UncertainError{Cause: fmt.Errorf(
		"the reply came after the lease's TTL had run out, and releasing the lock it took did not end cleanly: %w", err)})
}

// unacknowledged undoes an acquire whose WAIT counted too few replicas
// (WithReplicaAck): the lock is the lease's on the primary, but a
// failover could lose it. It returns the acquire's error, which matches
// ErrNotAcquired.
func (c *claim) unacknowledged(ctx context.Context, ls *Lease, short error) error {
	_ = ls.unlock(ctx, nil, observe.Released)
	return c.errorf("acquire", fmt.Errorf("%w: %w", ErrNotAcquired, short))
}

// stopReason is ErrClosed when a wait ended because the Locker is closing,
// and err otherwise.
func (c *claim) stopReason(err error) error {
	if c.l.closing.Err() != nil {
		return errLockerClosed
	}
	return err
}

// directedWaiter registers a waiter for hand-offs on sub: under shard
// channels on one of the lock's own, in its slot (<lock>:to:<process
// channel>), else on the process's channel. onMessage, unless nil, is
// given the text of each hand-off's message before it wakes the waiter.
func (c *claim) directedWaiter(ctx context.Context, sub *subscriber.Subscriber, onMessage func(string)) (*subscriber.Waiter, error) {
	topic := subscriber.Topic{Directed: true, OnMessage: onMessage}
	if c.l.sharded {
		topic.Channel, topic.Shard = c.names.lock+":to:", true
	}
	return sub.Watch(ctx, topic)
}

// listenAttempts bounds how often a claim looks for the node to listen on
// when the one it asked refused a shard channel's subscription.
const listenAttempts = 3

// listen runs subscribe, which registers the claim's waiters on the
// Subscriber of the key's node. A node that answers MOVED or ASK to a
// shard channel's SSUBSCRIBE does not serve the lock's slot, or not
// wholly: the cluster client learns where the slot went from a command on
// the lock's key, and the claim asks again, a few times.
func (c *claim) listen(ctx context.Context, subscribe func(*subscriber.Subscriber) error) error {
	var err error
	for range listenAttempts {
		var sub *subscriber.Subscriber
		if sub, err = c.l.nodes.subscriber(ctx, c.names.lock); err != nil {
			return err
		}
		if err = subscribe(sub); !errors.Is(err, resp.Moved) && !errors.Is(err, resp.Ask) {
			return err
		}
		if _, err := c.cmd.Do(ctx, "PTTL", c.names.lock); err != nil {
			return err
		}
	}
	return err
}

// notRun reports whether an error reply to the early attempt, which goes
// straight to a connection, says the script did not run and can be sent
// again: it is not loaded there, or, on a cluster, its slot has moved
// (MOVED), is moving (ASK), or the cluster cannot serve it now (see
// cluster.RefusedForNow), which the cluster client waits out.
func notRun(err error) bool {
	return errors.Is(err, resp.NoScript) || errors.Is(err, resp.Moved) || errors.Is(err, resp.Ask) || cluster.RefusedForNow(err)
}

// acquireMayHaveWritten reports whether an acquire that failed with err
// may have left writes behind, which the claim must undo: the script may
// still run (mayHaveRun), or it ran and raised partway, an error reply
// other than those that say it did not run (notRun). Redis keeps a
// script's writes up to the error, and an acquire's first write is the
// lock.
func acquireMayHaveWritten(err error) bool {
	return mayHaveRun(err) || (isErrorReply(err) && !notRun(err))
}

// mayHaveRun reports whether a failed call may still have run on the
// server: it was abandoned by its context after being queued, or its
// connection broke with it in flight.
func mayHaveRun(err error) bool {
	var uncertain *conn.UncertainError
	return errors.As(err, &uncertain) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
