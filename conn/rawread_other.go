//go:build !unix

package conn

import "syscall"

// Without a raw socket there is no direct reading (see Conn.direct), so
// this is never called.
func idleBytes(syscall.RawConn) (int, byte, error) { return -1, 0, nil }
