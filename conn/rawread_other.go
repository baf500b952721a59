//go:build !unix

package conn

import "syscall"

// Without a raw socket there is no direct reading (see Conn.direct), so
// these are never called.

type replyWatch struct{}

func newReplyWatch(syscall.RawConn) *replyWatch { return nil }

func (*replyWatch) wait() error { return nil }

func idleBytes(syscall.RawConn) (int, error) { return -1, nil }
