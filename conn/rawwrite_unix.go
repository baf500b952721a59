//go:build unix

package conn

import (
	"net"
	"syscall"
)

// rawConnOf returns the raw connection of a TCP or unix socket, on which a
// write can be tried without blocking, or nil for any other kind.
func rawConnOf(nc net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch nc := nc.(type) {
	case *net.TCPConn:
		sc = nc
	case *net.UnixConn:
		sc = nc
	default:
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNonBlocking makes one write(2) of p on the socket, which the runtime
// keeps in non-blocking mode, and returns how many bytes it took: none when
// the socket buffer is full (EAGAIN) or on any error, which the writer
// goroutine's own write will then meet and report. The function given to
// RawConn.Write returns true whatever happens, so that Write never waits
// for the socket to become writable.
func writeNonBlocking(raw syscall.RawConn, p []byte) int {
	var n int
	err := raw.Write(func(fd uintptr) bool {
		n, _ = syscall.Write(int(fd), p)
		return true
	})
	if err != nil || n < 0 {
		return 0
	}
	return n
}
