// Package conn is one connection to one Redis server, written on package
// resp: dialing (TCP, unix socket, TLS, and the redis://, rediss:// and
// unix:// URL forms), the handshake (HELLO, AUTH, SELECT, CLIENT SETNAME),
// pipelined commands, a wire tap, and a [Client] that redials after the
// connection breaks.
//
// Concurrency: a [Conn] is safe for concurrent use, and that is how it is
// meant to be used. Commands from many goroutines are appended to one buffer
// and leave in shared writes: the caller that finds no write in progress
// writes for everyone who queued meanwhile, so there is no writer goroutine
// and no hand-off for a lone caller. The commands of one call always leave
// contiguous, in one write. One reader goroutine per connection decodes
// replies and completes calls in the order their commands were written. A
// caller whose context ends returns at once; its reply is still read and
// dropped, so later replies never shift. A reply over one of the reader's
// limits (see [WithReaderOptions]) is read past and dropped, and fails its
// own call alone, with an error matching resp.ErrLimit: the command did run;
// a call of several commands fails as a whole. The connection stays in step
// and usable, and the calls around it get their own replies. A push frame
// over a limit is dropped. When the connection breaks (an I/O error, bytes
// that are not valid RESP, a reply nobody asked for), every call in flight
// fails with an [*UncertainError], because its command may or may not have
// run, and the connection refuses further calls. Close stops the reader
// goroutine and waits for it.
package conn
