package lock

// The fast mode, the default: its Lock, its waiter and its scripts'
// arguments. fast.lua holds the scripts; the package doc says what the
// mode promises, and docs/PROTOCOL.md why it keeps those promises.

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/observe"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// lockFast is Lock in fast mode. A key this process waits for, or waited
// for lately, or that this Locker's last release of it handed on, is
// contended: there the first attempt already asks, since an attempt that
// does not ask would only fail first.
func (c *claim) lockFast(ctx context.Context, cmds [][]string) (attempt, error) {
	if !c.l.nodes.contended(c.names.lock) && !c.l.contention.lately(c.names.lock) {
		a, err := c.tryFast(ctx, askNot, cmds)
		if a.lease != nil || err != nil {
			return a, err
		}
		c.retried = true // an attempt that acquires now is not the first
	}
	return c.waitFast(ctx, cmds)
}

// waitFast is Lock's wait in fast mode: register for hand-offs, try again
// asking the holder to let go, and wait between tries.
//
// The request does the work: every release of a lock with a request
// standing hands it on, so a waiter whose request stands needs no release
// event. It first waits without watching the key's releases, so that the
// keyspace events of a busy lock (each SET of it with a TTL is one) do
// not reach every waiting process. It looks again within a hand-off
// window, and then watches the releases: a lock handed to a waiter that
// never confirms, or one released by a client that does not hand on, is
// caught by its keyspace event from then on.
func (c *claim) waitFast(ctx context.Context, cmds [][]string) (attempt, error) {
	l := c.l
	// The wait ends when ctx does or Close begins. The attempts keep the
	// caller's ctx: one that cannot end costs conn no watch of it while
	// the attempt reads its reply (see conn), and Close breaks a call
	// stuck on the server.
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.closing, cancel)()

	ln, err := c.listenFast(waitCtx, handOffsOnly)
	if err != nil {
		return attempt{}, err
	}
	defer func() { ln.close() }()
	var timer *time.Timer
	var sent *sentAttempt
	var withCmds [][]string // commands ride along with the confirmation of a hand-off
	var handOff string      // a hand-off's message that came while an attempt was on its way
	for {
		var a attempt
		if sent != nil && sent.pending != nil {
			a, err = c.awaitFast(ctx, *sent)
		} else {
			a, err = c.tryFast(ctx, c.ask(), withCmds)
		}
		if err != nil {
			c.withdrawInBackground()
			return attempt{}, err
		}
		if a.lease != nil {
			return a, nil
		}
		c.step(observe.Asked)
		if handOff != "" {
			// The attempt ran before the hand-off (after it, it would
			// have found the lock its own): the message stands.
			if a, ok, err := c.handedOver(handOff, cmds, 0); ok {
				return a, err
			}
			// It cannot stand for the lease: confirm the hand-off now,
			// rather than leave the lock handed to the claim idle until
			// the claim next looks.
			c.step(observe.Confirming)
			handOff, sent, withCmds = "", nil, cmds
			continue
		}
		if l.nodes.stale(ln.sub, c.names.lock) {
			// The key's slot moved: its releases are heard elsewhere
			// now. Listen there, and try again, since a release may have
			// gone unheard meanwhile.
			hears := handOffsOnly
			if ln.release != nil {
				hears = handOffsAndReleases
			}
			ln.close()
			if ln, err = c.listenFast(waitCtx, hears); err != nil {
				c.withdrawInBackground()
				return attempt{}, err
			}
			sent, withCmds = nil, nil
			continue
		}
		// A release we did not hear (a notification lost while the
		// subscriber reconnects, say) is caught when the TTL runs out,
		// or sooner where the backend says (a slot that moved).
		remaining := a.retryIn
		if r := l.nodes.recheck(); r > 0 && remaining > r {
			remaining = r
		}
		if window := min(l.opts.TTL, handoffWindow); ln.release == nil && remaining > window {
			remaining = window
		}
		if timer == nil {
			timer = time.NewTimer(remaining)
			defer timer.Stop()
		} else {
			timer.Reset(remaining)
		}
		sent, withCmds = nil, nil
		ln.arm()
		stopped, timedOut := false, false
		select {
		case s := <-ln.earlySent():
			sent = &s
			// The wake-up that came with the hook is spent: left
			// pending, it would be handed to the next waiter for nothing.
			select {
			case <-ln.releaseWake():
			default:
			}
		case <-ln.releaseWake():
		case <-ln.handoff.Wake():
			var at time.Time
			if handOff, at = ln.inbox.take(); handOff != "" {
				c.tookMessage(at)
			}
			withCmds = cmds
		case <-timer.C:
			timedOut = true
		case <-waitCtx.Done():
			stopped = true
		}
		if sent == nil && !ln.disarm() {
			// The release hook fired meanwhile: its attempt is on its way.
			s := <-ln.early.sent
			sent = &s
		}
		if stopped {
			c.withdrawInBackground()
			return attempt{}, c.errorf("wait", c.stopReason(waitCtx.Err()))
		}
		if sent == nil && handOff != "" {
			a, ok, err := c.handedOver(handOff, cmds, 0)
			if ok {
				return a, err
			}
			c.step(observe.Confirming) // the next attempt
			handOff = ""
		}
		if timedOut && ln.release == nil {
			// A hand-off window went by with none: watch the releases
			// from now on, then look again, since one may have gone
			// unheard meanwhile.
			if err := c.watchReleases(waitCtx, ln); err != nil {
				c.withdrawInBackground()
				return attempt{}, c.errorf("wait", c.stopReason(err))
			}
		}
	}
}

// fastListener is a fast-mode waiter's registrations, on the Subscriber
// that hears the key's releases: for hand-offs, and, once it watches them,
// for the releases, whose hook sends the next attempt early.
type fastListener struct {
	sub     *subscriber.Subscriber
	node    *conn.Client // where the early attempts go
	handoff *subscriber.Waiter
	release *subscriber.Waiter // nil until the waiter watches the releases
	early   *earlyAttempt      // nil until the waiter watches the releases
	inbox   handOffInbox       // the hand-off's message for the claim
}

// hears is what a fast waiter listens for.
type hears int

const (
	handOffsOnly        hears = iota // hand-offs to the waiter
	handOffsAndReleases              // those, and the key's releases, which send the next attempt early
)

// listenFast registers the claim's waiter for what h says, and sets where
// a hand-off reaches it (c.asker).
func (c *claim) listenFast(ctx context.Context, h hears) (*fastListener, error) {
	node, err := c.l.nodes.node(ctx, c.names.lock)
	if err != nil {
		return nil, c.errorf("wait", c.stopReason(err))
	}
	var ln *fastListener
	err = c.listen(ctx, func(sub *subscriber.Subscriber) error {
		ln = &fastListener{sub: sub, node: node, inbox: handOffInbox{owner: c.owner}}
		handoff, err := c.directedWaiter(ctx, sub, ln.inbox.heard)
		if err != nil {
			return err
		}
		c.asker = formatAsker(handoff.Address())
		ln.handoff = handoff
		if h == handOffsOnly {
			return nil
		}
		if err := c.watchReleases(ctx, ln); err != nil {
			handoff.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, c.errorf("wait", c.stopReason(err))
	}
	return ln, nil
}

// watchReleases adds the key's releases to what ln hears, with the hook
// that sends the next attempt early.
func (c *claim) watchReleases(ctx context.Context, ln *fastListener) error {
	l := c.l
	// Armed only after the claim's first ask: it asks again.
	early := &earlyAttempt{node: ln.node, cmds: [][]string{fastAcquireScript.command(bySHA, c.names.fastKeys(), c.fastArgs(askAgain))}, sent: make(chan sentAttempt, 1)}
	if l.waitCmd != nil {
		early.cmds = append(early.cmds, l.waitCmd)
	}
	release, err := ln.sub.Watch(ctx, subscriber.Topic{Key: c.names.lock, OnRelease: early.send})
	if err != nil {
		return err
	}
	ln.release, ln.early = release, early
	return nil
}

func (ln *fastListener) close() {
	if ln == nil {
		return // a listen that failed
	}
	if ln.release != nil {
		ln.release.Close()
	}
	ln.handoff.Close()
}

// releaseWake is the release waiter's wake-ups, or nil (never ready) while
// the waiter does not watch the releases.
func (ln *fastListener) releaseWake() <-chan struct{} {
	if ln.release == nil {
		return nil
	}
	return ln.release.Wake()
}

// earlySent is where the release hook reports an attempt, or nil.
func (ln *fastListener) earlySent() <-chan sentAttempt {
	if ln.early == nil {
		return nil
	}
	return ln.early.sent
}

// arm lets the release hook send the next attempt, while the waiter sleeps.
func (ln *fastListener) arm() {
	if ln.early != nil {
		ln.early.armed.Store(true)
	}
}

// disarm takes the next attempt back from the release hook; false if the
// hook has sent it already.
func (ln *fastListener) disarm() bool {
	return ln.early == nil || ln.early.armed.CompareAndSwap(true, false)
}

// formatAsker is where a hand-off reaches a waiter (see
// subscriber.Waiter.Address), as a request names it.
func formatAsker(channel string, waiterID uint64) string {
	return strconv.FormatUint(waiterID, 10) + " " + channel
}

// fastArgs are the acquire script's ARGV for this claim.
func (c *claim) fastArgs(ask askMode) []string {
	l := c.l
	return fastAcquireArgs{owner: c.owner, ttl: l.ttlArg, ask: ask, asker: c.asker, retention: l.retentionArg, publish: l.publish}.argv()
}

// ask is how the claim's next attempt asks the holder to let go, once it
// waits: first, or again. It notes that the claim has asked.
func (c *claim) ask() askMode {
	if c.asked {
		return askAgain
	}
	c.asked, c.firstAsk = true, time.Now()
	return askFirst
}

// tryFast runs the acquire script once, asking as ask says, with cmds in
// the same write.
func (c *claim) tryFast(ctx context.Context, ask askMode, cmds [][]string) (attempt, error) {
	start := time.Now()
	r, err := c.l.runAcked(ctx, c.cmd, scriptCall{script: &fastAcquireScript, keys: c.names.fastKeys(), args: c.fastArgs(ask)}, cmds)
	a, err := c.acquiredFast(start, r.reply, err)
	return c.confirmed(ctx, a, r, err)
}

// awaitFast collects the reply of an attempt the release hook sent.
func (c *claim) awaitFast(ctx context.Context, s sentAttempt) (attempt, error) {
	replies, err := s.pending.Wait(ctx)
	var v resp.Value
	var short error
	if err == nil {
		v = replies[0]
		err = v.Err()
		if len(replies) > 1 {
			short = c.l.acknowledged(replies[1])
		}
		if notRun(err) {
			// The cluster client follows a redirect and waits out a
			// TRYAGAIN; the script is loaded where it was not.
			return c.tryFast(ctx, askAgain, nil)
		}
	}
	a, err := c.acquiredFast(s.at, v, err)
	return c.confirmed(ctx, a, scriptResult{short: short}, err)
}

// acquiredFast reads the acquire script's reply to an attempt sent at
// start: a fencing token, or how long the holder has left.
func (c *claim) acquiredFast(start time.Time, v resp.Value, err error) (attempt, error) {
	if err != nil {
		if acquireMayHaveWritten(err) {
			// The script may have taken the lock for an owner who has
			// gone: undo it, after it on the same connection.
			c.withdrawInBackground()
		}
		return attempt{}, c.errorf("acquire", err)
	}
	if v.Type != resp.Integer {
		c.withdrawInBackground()
		return attempt{}, c.errorf("acquire", errBadReply)
	}
	switch {
	case v.Int > 0:
		return c.acquired(uint64(v.Int), start, 0)
	case v.Int == 0: // held with no TTL: look again a TTL from now
		return attempt{retryIn: c.l.opts.TTL}, nil
	default:
		return attempt{retryIn: time.Duration(-1-v.Int)*time.Millisecond + time.Millisecond}, nil
	}
}

// fastRelease is the release script's call for the claim, behind a PING
// as every release is.
func (c *claim) fastRelease() scriptCall {
	l := c.l
	args := fastReleaseArgs{owner: c.owner, ttl: l.ttlArg, retention: l.retentionArg, publish: l.publish}
	return scriptCall{script: &fastReleaseScript, keys: c.names.fastKeys(), args: args.argv(), lead: pingFirst}
}

// fastCommit is the commit script's call for the claim's write-back w.
func (c *claim) fastCommit(w *Write) scriptCall {
	return scriptCall{script: &fastCommitScript, keys: []string{c.names.lock, w.Key, c.names.wanted, c.names.fence}, args: c.commitArgs(w)}
}

// withdrawInBackground ends the claim of a fast-mode waiter that gave up:
// its request goes, and so does a lock handed to it meanwhile or taken by
// an attempt whose reply it did not wait for (see fast.lua's withdraw).
// Best effort: the keys' TTLs are the backstop.
func (c *claim) withdrawInBackground() {
	c.l.inBackground(func(ctx context.Context) {
		withdraw := func(ctx context.Context) (scriptResult, error) {
			args := fastWithdrawArgs{owner: c.owner, asker: c.asker, ttl: c.l.ttlArg, retention: c.l.retentionArg, publish: c.l.publish}
			return c.l.runAcked(ctx, c.cmd, scriptCall{script: &fastWithdrawScript, keys: c.names.fastKeys(), args: args.argv()}, nil)
		}
		r, err := c.l.retryUncertain(ctx, withdraw)
		c.backgroundFailed(err)
		if err == nil && r.short != nil {
			c.l.untilAcknowledged(ctx, withdraw)
		}
	})
}

// earlyAttempt lets the subscriber's reader send a waiter's next acquire
// attempt the moment it hears a release. The waiter arms it only while it
// sleeps, and whoever disarms it first (the hook, or the waiter waking for
// another reason) decides who attempts: the same owner never has two
// attempts in flight.
type earlyAttempt struct {
	node  *conn.Client     // the client of the server that holds the key
	cmds  [][]string       // the acquire script call, EVALSHA form, and the WAIT if any
	armed atomic.Bool      // set by the waiter before it sleeps
	sent  chan sentAttempt // capacity 1: what the hook did once it disarmed
}

// sentAttempt is an attempt the hook sent; pending is nil if it could not
// send (no live connection), and the waiter then tries itself.
type sentAttempt struct {
	pending *conn.Pending
	at      time.Time
}

// send runs on the subscriber's reader goroutine. It never blocks: Start
// only queues (and perhaps writes) the command, and sent has room.
func (e *earlyAttempt) send() {
	if !e.armed.CompareAndSwap(true, false) {
		return
	}
	s := sentAttempt{at: time.Now()}
	if cn := e.node.Current(); cn != nil {
		s.pending, _ = cn.Start(e.cmds...)
	}
	e.sent <- s
}

// contendedFor is how long after one of its releases handed a lock on a
// Locker takes the lock for contended.
const contendedFor = time.Second

// maxRemembered bounds the locks that contention remembers: past it, the
// stale ones go, and if none is stale, all do (a Lock then only fails its
// first attempt, as on a lock it never saw).
const maxRemembered = 4096

// contention remembers the locks that a Locker's releases handed on
// lately: a Lock of one asks at its first attempt. In a tight loop of Lock
// and Unlock on a contended lock, the waiters have asked, and the next
// Lock would otherwise only fail first.
type contention struct {
	mu       sync.Mutex
	handOffs map[string]time.Time // guarded by mu: lock name -> when a release handed it on
}

func (c *contention) handedOn(lockName string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handOffs == nil {
		c.handOffs = make(map[string]time.Time)
	}
	if _, ok := c.handOffs[lockName]; !ok && len(c.handOffs) >= maxRemembered {
		for name, at := range c.handOffs {
			if now.Sub(at) >= contendedFor {
				delete(c.handOffs, name)
			}
		}
		if len(c.handOffs) >= maxRemembered {
			clear(c.handOffs)
		}
	}
	c.handOffs[lockName] = now
}

// lately reports whether a release handed lockName on within contendedFor.
func (c *contention) lately(lockName string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.handOffs[lockName]
	if ok && time.Since(at) >= contendedFor {
		delete(c.handOffs, lockName)
		return false
	}
	return ok
}

// The fast mode's scripts (fast.lua), and the ARGV of each.
var (
	fastAcquireScript  = fastScripts.named("acquire")
	fastWithdrawScript = fastScripts.named("withdraw")
	fastReleaseScript  = fastScripts.named("release")
	fastCommitScript   = fastScripts.named("commit")
)

// askMode is how an acquire asks the holder to let go (fast.lua's
// acquire, ARGV ask).
type askMode string

const (
	askNot   askMode = "0" // not at all: a claim that never asked has no request to take back
	askFirst askMode = "1" // a claim's first ask, whose request cannot stand yet
	askAgain askMode = "2" // a later ask, whose request may stand
)

// fastAcquireArgs are the ARGV of fast.lua's acquire.
type fastAcquireArgs struct {
	owner, ttl string
	ask        askMode
	asker      string // "<waiter-id> <channel>", where a hand-off reaches the claim's waiter
	retention  string // the fencing counter's TTL
	publish    string
}

func (a fastAcquireArgs) argv() []string {
	return []string{a.owner, a.ttl, string(a.ask), a.asker, a.retention, a.publish}
}

// fastWithdrawArgs are the ARGV of fast.lua's withdraw.
type fastWithdrawArgs struct {
	owner     string
	asker     string // the claim's request's asker, "" if it never asked
	ttl       string // a hand-off's
	retention string // the fencing counter's TTL
	publish   string
}

func (a fastWithdrawArgs) argv() []string {
	return []string{a.owner, a.asker, a.ttl, a.retention, a.publish}
}

// fastReleaseArgs are the ARGV of fast.lua's release.
type fastReleaseArgs struct {
	owner     string
	ttl       string // a hand-off's
	retention string // the fencing counter's TTL
	publish   string
}

func (a fastReleaseArgs) argv() []string {
	return []string{a.owner, a.ttl, a.retention, a.publish}
}
