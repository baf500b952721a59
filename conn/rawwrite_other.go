//go:build !unix

package conn

import (
	"net"
	"syscall"
)

// rawConnOf returns nil: without a write that cannot block, every write that
// must not wait goes to the writer goroutine.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func writeNonBlocking(syscall.RawConn, []byte) int { return 0 }
