package lock

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// A release that hands the lock on, in either mode, sets the lock to the
// waiter's owner token for the releaser's TTL, issues the waiter's fencing
// token and publishes "<waiter-id> <token> <ttl> <owner>" to the waiter
// (fast.lua's handOff, fair.lua's promote). The waiter holds its lease
// from that message alone, or confirms the hand-off with an acquire where
// the message cannot stand for the lease (see handedOver).

// handOffInbox keeps the text of a hand-off's message for one claim,
// stored by the subscriber's reader goroutine (Topic.OnMessage) and taken
// by the claim's waiter.
type handOffInbox struct {
	message atomic.Pointer[heardMessage]
	owner   string // the claim's owner token; set before the inbox is shared
}

// heardMessage is a hand-off's message, and when it came in.
type heardMessage struct {
	text string
	at   time.Time
}

// heard keeps the text of a hand-off's message for the claim: the first
// that ends with its owner token, until the waiter takes it. A later one,
// while it waits to be taken, can only be a replay (a client that saw the
// release's message on the channel and published another with the same
// owner token), which must not replace the release's own: the server
// delivers a channel's messages in the order they were published, so the
// release's comes first.
func (in *handOffInbox) heard(text string) {
	if strings.HasSuffix(text, " "+in.owner) {
		in.message.CompareAndSwap(nil, &heardMessage{text, time.Now()})
	}
}

// take takes the text of the hand-off's message that heard kept, and
// when it came in, or "".
func (in *handOffInbox) take() (string, time.Time) {
	if m := in.message.Swap(nil); m != nil {
		return m.text, m.at
	}
	return "", time.Time{}
}

// handedOver makes the lease that a hand-off's message, "<token> <ttl>
// <owner>", grants the claim, and reports whether it did; queuedAfter is
// recorded on the lease, as fairAttempt does. The release that sent it
// set the lock to the claim's owner token for ttl, after the claim first
// asked (fast mode) or queued (fair mode): so the lease counts its TTL
// from c.firstAsk, a moment before the server set it, and needs no
// confirmation. The claim's owner token, which only a script that read
// the claim's request or queue entry knows, makes the message the
// release's: a client allowed to publish on the process's channel, but
// not to read baton's keys, cannot make a waiter take a lease. It does
// not make one, and the waiter confirms the hand-off with an acquire as a
// waiter of an earlier version does, where the message is another's (an
// ID alone, from a release of an earlier version), where the release set
// another TTL than the claim's, where the wait took so long that counting
// from the first ask would leave the lease less than half its TTL, where
// commands are to ride with the acquire (the confirmation carries them at
// no cost), and where WithReplicaAck asks for the acquire's
// acknowledgement.
func (c *claim) handedOver(message string, cmds [][]string, queuedAfter uint64) (attempt, bool, error) {
	l := c.l
	if len(cmds) > 0 || l.waitCmd != nil || c.firstAsk.IsZero() || time.Since(c.firstAsk) > l.opts.TTL/2 {
		return attempt{}, false, nil
	}
	tokenText, rest, _ := strings.Cut(message, " ")
	ttl, owner, _ := strings.Cut(rest, " ")
	if owner != c.owner || c.heardHandOff {
		return attempt{}, false, nil
	}
	// A claim takes a lease from its first hand-off's message at most:
	// a later one bearing its owner token is a replay by a client that
	// saw the first on the channel (a hand-off the claim confirmed, and
	// lost before the confirmation came, is handed to it anew only after
	// it asks again, and confirmed then too).
	c.heardHandOff = true
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if err != nil || token == 0 || ttl != l.ttlArg {
		return attempt{}, false, nil
	}
	ls := c.newLease(token, c.firstAsk, queuedAfter)
	if ls == nil {
		c.releaseInBackground()
		return attempt{}, true, c.errorf("wait", errLockerClosed)
	}
	return attempt{lease: ls}, true, nil
}
