// Package conn is one connection to one Redis server, written on package
// resp: dialing (TCP, unix socket, TLS, and the redis://, rediss:// and
// unix:// URL forms), the handshake (HELLO, AUTH, SELECT, CLIENT SETNAME),
// pipelined commands, a wire tap, and a [Client] that redials after the
// connection breaks.
//
// Concurrency: a [Conn] is safe for concurrent use, and that is how it is
// meant to be used. Commands from many goroutines are appended to one buffer
// and leave in shared writes: a Do, DoMulti or DoPush caller that finds no
// write in progress writes for everyone who queued meanwhile, so there is no
// hand-off for a lone caller. One that finds other calls in flight first
// yields its thread once (runtime.Gosched), so that callers about to send
// again queue behind it and share its write. [Conn.Start] never waits for the
// socket: it writes at once only what the socket takes without blocking (TCP
// and unix sockets), and leaves the rest to a writer goroutine, which the
// Conn starts when needed and which returns once nothing is left to write.
// Bytes leave in the order they were queued. The commands of one call leave
// contiguous, in one write (when the socket filled during a write, the rest
// of it is one write), and a multi-command call starts a new write rather
// than straddle one of the server's 16 KiB read windows. Replies are decoded,
// and calls completed in the order their commands were written, by whoever
// holds the reading role. On a TCP or unix socket without a push handler a
// caller who finds no one reading reads the replies itself, its own and
// others', until its own has come, the mirror of how writes are shared: a
// lone caller takes its reply from the socket with no goroutine to wake in
// between. One whose context can end waits on the socket only between frames,
// so that it can leave the moment its context ends, and a reply longer than
// the read buffer is left to a reader goroutine; the watch on its context
// costs the two allocations of context.AfterFunc, which a caller that needs a
// bound but never gives up sooner avoids with [WithReplyDeadline]. Otherwise
// a reader goroutine reads, and returns once no reply is due, so that an idle
// connection holds none; on other connections (TLS, push) one reader
// goroutine reads for the connection's life. A caller whose context ends
// returns at once; its reply is still read and dropped, so later replies
// never shift. A connection with no reader while idle notices that the server
// closed it, or sent a reply nobody asked for, when a call or [Conn.Err]
// looks at it: a call that finds it so has sent nothing, fails with
// [ErrBroken], and a [Client] makes it again on a new connection. A RESP3
// push frame found then is no such reply: the next reader drops it. A
// reply over one of the reader's limits (see [WithReaderOptions]) is read
// past and dropped, and fails its own call alone, with an error matching
// resp.ErrLimit: the command did run; a call of several commands fails as
// a whole. The connection stays in step and usable,
// and the calls around it get their own replies. A push frame over a limit is
// dropped. When the connection breaks (an I/O error, bytes that are not valid
// RESP, a reply nobody asked for), every call in flight fails with an
// [*UncertainError], because its command may or may not have run, and the
// connection refuses further calls. Close stops the reader and writer
// goroutines, and waits for them.
package conn
