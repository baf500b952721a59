//go:build unix

package conn

import (
	"errors"
	"syscall"
)

// idleBytes looks, without waiting, at what an idle connection's socket
// holds: n < 0 when nothing (all is well), 0 for an end of stream, more
// for bytes, of which first is the first; or the socket's error.
func idleBytes(raw syscall.RawConn) (n int, first byte, err error) {
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
		return -1, 0, rerr
	}
	return n, probe[0], err
}
