package conn

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonlock/baton/resp"
)

// call is one Do or DoMulti in flight: n commands whose replies the reader
// goroutine fills in, in order.
type call struct {
	n       int
	got     int          // replies filled in; by the holder of the reading role
	replies []resp.Value // written by the holder of the reading role before done
	one     [1]resp.Value
	err     error // set before done when the connection failed or a reply was over a limit

	// replyBy is the call's reply deadline (WithReplyDeadline), or zero;
	// set before the call is queued, read under the Conn's mu.
	replyBy time.Time

	// overLimit is the error of the first of the call's replies that was
	// over a reader limit (matching resp.ErrLimit); the call fails with it
	// once its last reply is in. The holder of the reading role only.
	overLimit error

	// answeredByPush marks a DoPush call: its command is answered by push
	// frames and its one reply is the PING's that follows, unless an error
	// reply to the command comes first, which is then kept as the result.
	answeredByPush bool
	commandFailed  bool // the holder of the reading role only

	// state settles the race between the reply and the caller giving up:
	// whoever moves it away from waiting decides.
	state atomic.Int32
	done  chan struct{} // capacity 1; receives once the call is settled
}

const (
	waiting int32 = iota
	completed
	abandoned
)

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// newCall returns a call for len(replies) commands, or for one command
// answered into the call's own storage when replies is nil (Do's case,
// which then allocates nothing).
func newCall(replies []resp.Value) *call {
	c := callPool.Get().(*call)
	if replies == nil {
		replies = c.one[:]
	}
	c.n, c.got, c.err, c.overLimit, c.replies, c.replyBy = len(replies), 0, nil, nil, replies, time.Time{}
	c.answeredByPush, c.commandFailed = false, false
	c.state.Store(waiting)
	return c
}

// release returns a call that its caller has finished with to the pool. An
// abandoned call is never released: the reader may still be writing it.
func (c *call) release() {
	c.one[0] = resp.Value{}
	c.replies = nil
	callPool.Put(c)
}

// complete settles the call from the reader's side (or from a failing
// connection).
func (c *call) complete(err error) {
	c.err = err
	if c.state.CompareAndSwap(waiting, completed) {
		c.done <- struct{}{}
	}
}

// abandon settles the call from the caller's side. If the reply won the race
// it reports false, and the caller must take the reply after all.
func (c *call) abandon() bool {
	return c.state.CompareAndSwap(waiting, abandoned)
}
