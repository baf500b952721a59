package lock

import (
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/conn"
)

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
