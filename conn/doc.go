// Package conn is one connection to one Redis server, written on package
// resp: dialing (TCP, unix socket, TLS, the redis://, rediss:// and
// unix:// URL forms, and redis+sentinel://, which asks Redis Sentinel for
// the primary at every dial), the handshake (HELLO, AUTH, SELECT, CLIENT SETNAME),
// pipelined commands, a wire tap, and a [Client] that redials after the
// connection breaks.
//
//	c, err := conn.NewClient("redis://localhost:6379/0", conn.WithClientName("worker-7"))
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	v, err := c.Do(ctx, "INCR", "visits")
//	var uncertain *conn.UncertainError
//	switch {
//	case errors.As(err, &uncertain):
//		// the connection broke with the INCR in flight: it may or may not have run
//	case err != nil:
//		// an error reply (errors.Is(err, resp.WrongType), ...), or ctx ended
//	default:
//		fmt.Println(v.Int)
//	}
//
// # Connecting
//
// [Dial] connects and runs the handshake, and returns one [Conn]; see it
// for the address forms. [NewClient] returns a [Client], which dials on its
// first call and again after its connection breaks, waiting between failed
// dials as [WithRedialBackoff] says. The handshake's options: [WithUsername],
// [WithPassword], [WithDB], [WithClientName], [WithRESP3], [WithTLS] and
// [WithDialTimeout]; options override what the URL says.
//
// # Redis Sentinel
//
// A redis+sentinel:// address names sentinels and the name they know a
// primary by:
//
//	redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/name[/db][?sentinel_username=U&sentinel_password=P]
//	rediss+sentinel://...   the same, with TLS to the sentinels and the nodes
//
// Every dial asks the sentinels, in the order given (port 26379 where
// none is), for the primary's address and its configuration epoch
// (SENTINEL MASTER), dials it and checks with ROLE that it is a primary;
// a sentinel that does not answer, or that names a node that is not a
// primary (a sentinel behind a failover), is passed over for the next,
// and so, once a Client has heard of a newer epoch, is one that names an
// older. While the sentinels name a primary that cannot be reached or
// says it is none, a failover is under way: a Client's dial asks again,
// paced (50ms, doubling up to 500ms), for as long as the call's context
// allows, so that a call made during a failover waits for the new primary
// rather than failing at once. Where no sentinel names a primary at all
// (none answers, or none knows the name), the dial fails at once.
//
// A [Client] follows a failover. The sentinels kill the clients of the
// nodes they reconfigure, and the Client's next dial reaches the new
// primary. But a primary still alive when it was failed over (SENTINEL
// FAILOVER, a partition that heals) keeps saying it is one, and keeps
// its clients, until the sentinels reconfigure it: about ten seconds
// later on Redis 7.0.15, and what a client writes there meanwhile is
// lost. So a Client also keeps a connection to one sentinel subscribed
// to +switch-master, the announcement of a new primary, and to
// +promoted-slave, with which the sentinel that leads a failover
// announces the replica it promoted as soon as it sees it promoted (it
// names the old primary until every other replica follows the new one,
// seconds later under load; the other sentinels switch about when it
// announces the promotion). On either, and every 2s besides, it asks
// that sentinel for the primary; an answer that names another node,
// with an epoch no older than the current connection's, or a promotion
// of another node, breaks that connection (calls in flight fail with an
// *UncertainError that matches ErrBroken), and the next call dials the
// new primary; a promoted node that says it is no primary is not taken
// for one. The sentinels see a promotion at their next look at the
// replica, once a second during a failover: a Client leaves a primary
// failed over alive about 1.1s after SENTINEL FAILOVER, and what it
// wrote there in between is lost unless replicas acknowledged it
// (lock's WithReplicaAck). The watcher starts with the Client's first dial
// and moves to the next sentinel when its own fails; Close stops it. A
// Conn from [Dial] asks the sentinels once and does not follow them. The
// user, password and database are the data nodes', and options such as
// WithPassword set them; the sentinels, which usually have a password of
// their own or none, are asked with the sentinel_username and
// sentinel_password parameters (percent-encoded, and hidden in every
// error as the password is), and with the address's TLS setting and the
// dial, read and write timeouts. Asking a sentinel, and checking the
// node it names, takes the dial timeout at most.
//
// # Calls
//
// [Conn.Do] sends one command and returns its reply; an error reply comes
// back as an error matching *resp.Error. [Conn.DoMulti] sends several
// commands and returns their replies; error replies stay values.
// [Conn.Start] queues several commands and returns a [Pending] at once,
// whose [Pending.Wait] collects the replies. [Conn.DoPush] runs SUBSCRIBE
// and its kin under RESP3, whose push frames go to [WithPushHandler]. A
// [Client] has Do and DoMulti too, made on its current connection;
// [Client.Conn] returns that connection for the rest.
//
// # Concurrency
//
// A [Conn] is safe for concurrent use, and that is how it is meant to be
// used.
//
// Writes are shared. Commands from many goroutines are appended to one
// buffer and leave in shared writes: a Do, DoMulti or DoPush caller that
// finds no write in progress writes for everyone who queued meanwhile, so
// there is no hand-off for a lone caller. [Conn.Start] never waits for the
// socket: it writes at once only what the socket takes without blocking
// (TCP and unix sockets), and leaves the rest to a writer goroutine, which
// the Conn starts when needed and which returns once nothing is left to
// write. Bytes leave in the order they were queued. The commands of one
// call leave contiguous, in one write (when the socket filled during a
// write, the rest of it is one write), and a multi-command call starts a
// new write rather than straddle one of the server's 16 KiB read windows.
//
// Reads are shared too. Replies are decoded, and calls completed in the
// order their commands were written, by whoever holds the reading role. On
// a TCP or unix socket without a push handler, a caller who finds no one
// reading reads the replies itself, its own and others', until its own has
// come: a lone caller takes its reply from the socket with no goroutine to
// wake in between. One whose context can end waits on the socket only
// between frames, so that it can leave the moment its context ends, and a
// reply longer than the 16 KiB read buffer is left to a reader goroutine;
// the watch on its context costs the two allocations of context.AfterFunc,
// which a caller that needs a bound but never gives up sooner avoids with
// [WithReplyDeadline]. Otherwise a reader goroutine reads, and returns once
// no reply is due, so that an idle connection holds none. On other
// connections (TLS, push) one reader goroutine reads for the connection's
// life. A caller waiting for a reply that another goroutine reads may spin
// first ([WithSpinWait]).
//
// [Conn.Close] stops the reader and writer goroutines, and waits for them.
//
// # Cancellation and deadlines
//
// A caller whose context ends returns at once; its reply is still read and
// dropped, so later replies never shift. A call is also bounded by
// [WithReplyDeadline], which breaks the connection when a reply is late, as
// [WithReadTimeout] does for a silent server; a write by [WithWriteTimeout].
//
// # Errors
//
// When the connection breaks (an I/O error, bytes that are not valid RESP,
// a reply nobody asked for), every call in flight fails with an
// [*UncertainError], because its command may or may not have run, and the
// connection refuses further calls with an error matching [ErrBroken];
// after Close they fail with [ErrClosed].
//
// A connection with no reader while idle notices that the server closed it,
// or sent a reply nobody asked for, when a call or [Conn.Err] looks at it:
// a call that finds it so has sent nothing, fails with [ErrBroken], and a
// [Client] makes it again on a new connection. A RESP3 push frame found then
// is no such reply: the next reader drops it.
//
// A reply over one of the reader's limits (see [WithReaderOptions]) is read
// past and dropped, and fails its own call alone, with an error matching
// resp.ErrLimit: the command did run; a call of several commands fails as a
// whole. The connection stays in step and usable, and the calls around it
// get their own replies. A push frame over a limit is dropped.
//
// # Looking at the wire
//
// [WithTap] shows every write to and read from the socket as raw bytes, as
// they happen, marked [Write] or [Read]: the way to check in a test what
// left in one write.
package conn
