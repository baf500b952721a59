//go:build unix

package conn

import (
	"errors"
	"syscall"
)

// replyWatch waits for the first bytes of a reply on a socket (see wait).
// Only the holder of the reading role uses it. Its function for
// RawConn.Read is made once, so that a wait allocates nothing.
type replyWatch struct {
	raw    syscall.RawConn
	probe  [1]byte
	peeked bool
	look   func(fd uintptr) bool
}

func newReplyWatch(raw syscall.RawConn) *replyWatch {
	w := &replyWatch{raw: raw}
	w.look = w.lookOnce
	return w
}

// wait waits until the socket has bytes to read, or an end of stream or
// error to report, without consuming anything, so that a wait cut short
// leaves the reply stream in step. The first look is a peek; a look that
// finds nothing parks the goroutine until the socket is readable, after
// which it returns at once (a spurious wake-up then costs the read a wait
// of its own). It returns nil when something is there (an error of the
// socket is left for the read to report), else why the wait ended: a
// deadline (os.ErrDeadlineExceeded) or the socket's closing.
func (w *replyWatch) wait() error {
	w.peeked = false
	return w.raw.Read(w.look)
}

func (w *replyWatch) lookOnce(fd uintptr) bool {
	if w.peeked {
		return true // woken by readiness
	}
	w.peeked = true
	_, _, err := syscall.Recvfrom(int(fd), w.probe[:], syscall.MSG_PEEK)
	return !errors.Is(err, syscall.EAGAIN)
}

// idleBytes looks, without waiting, at what an idle connection's socket
// holds: n < 0 when nothing (all is well), 0 for an end of stream, more
// for bytes; or the socket's error.
func idleBytes(raw syscall.RawConn) (n int, err error) {
	var probe [1]byte
	n = -1
	rerr := raw.Read(func(fd uintptr) bool {
		var perr error
		n, _, perr = syscall.Recvfrom(int(fd), probe[:], syscall.MSG_PEEK)
		switch {
		case errors.Is(perr, syscall.EAGAIN):
			n = -1
		case perr != nil:
			n, err = -1, perr
		}
		return true
	})
	if rerr != nil {
		return -1, rerr
	}
	return n, err
}
