package conn

import (
	"crypto/tls"
	"time"

	"github.com/batonlock/baton/resp"
)

// Option configures Dial and NewClient.
type Option func(*options)

type options struct {
	username, password string
	db                 int
	clientName         string
	resp3              bool
	tlsConfig          *tls.Config
	dialTimeout        time.Duration
	readTimeout        time.Duration
	writeTimeout       time.Duration
	tap                func(Direction, []byte)
	pushHandler        func(resp.Value)
	readerOptions      []resp.ReaderOption
	minBackoff         time.Duration
	maxBackoff         time.Duration
	spinWait           time.Duration
}

func defaultOptions() options {
	return options{
		dialTimeout:  5 * time.Second,
		readTimeout:  5 * time.Second,
		writeTimeout: 5 * time.Second,
		minBackoff:   50 * time.Millisecond,
		maxBackoff:   2 * time.Second,
	}
}

// WithUsername sets the ACL user for AUTH or HELLO. Default: none, or the
// user in the address URL. An explicit option wins over the URL.
func WithUsername(u string) Option { return func(o *options) { o.username = u } }

// WithPassword sets the password for AUTH or HELLO. Default: none, or the
// password in the address URL; no AUTH is sent without one.
func WithPassword(p string) Option { return func(o *options) { o.password = p } }

// WithDB selects a logical database after connecting. Default: 0, or the
// database in the address URL; SELECT is sent only for a non-zero one.
func WithDB(n int) Option { return func(o *options) { o.db = n } }

// WithClientName names the connection (CLIENT SETNAME, or HELLO's SETNAME),
// so that CLIENT LIST shows whose it is. Default: unnamed.
func WithClientName(name string) Option { return func(o *options) { o.clientName = name } }

// WithRESP3 negotiates RESP3 with HELLO 3 during the handshake. Default:
// RESP2, which every server speaks; with it the reader refuses RESP3 frames,
// push frames included.
func WithRESP3() Option { return func(o *options) { o.resp3 = true } }

// WithTLS dials with TLS using cfg. Default: plain TCP, unless the address
// is a rediss:// URL, which uses a default config for its host name.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tlsConfig = cfg } }

// WithDialTimeout bounds connecting plus the handshake. Default: 5s. The
// dial's context can cut it shorter.
func WithDialTimeout(d time.Duration) Option { return func(o *options) { o.dialTimeout = d } }

// WithReadTimeout breaks the connection when the server stays silent for d
// while replies are due: a server that stopped, a half-open connection.
// Calls in flight then fail with an *UncertainError, and a Client's next
// call redials. So no call waits on a silent server longer than d,
// whatever its context: the timer counts silence, and restarts at every
// read, so a call queued behind others, or on a server that keeps
// sending, may wait longer. An idle connection has no reply due and is
// never broken by it. Default: 5s. A command that blocks on the server
// longer than d (BLPOP, XREAD BLOCK, WAIT, CLIENT PAUSE) needs a longer
// one; 0 turns the bound off, and leaves every call to its context.
func WithReadTimeout(d time.Duration) Option { return func(o *options) { o.readTimeout = d } }

// WithWriteTimeout breaks the connection when one write does not complete
// within d, which happens only when the server stops reading and the socket
// buffers fill. A Do, DoMulti or DoPush caller doing that write, on behalf
// of everyone queued with it, can be held this long past its own context;
// Start never is, as its writes that would wait go to the Conn's writer
// goroutine. Default: 5s; 0 means no limit.
func WithWriteTimeout(d time.Duration) Option { return func(o *options) { o.writeTimeout = d } }

// WithTap calls fn with the bytes of every write to and every read from the
// socket, as they happen: one call per Write, one per Read, each once the
// bytes are written or read. It is for tests and for inspecting the
// protocol. fn runs on the connection's hot path, from whoever writes (a
// caller or the writer goroutine) and the reader goroutine concurrently, so
// it must be quick and safe for concurrent use, and must copy p to keep it.
// Default: no tap.
func WithTap(fn func(dir Direction, p []byte)) Option { return func(o *options) { o.tap = fn } }

// WithPushHandler receives RESP3 push frames (pub/sub messages,
// invalidations), which are not replies to any call. fn runs on the reader
// goroutine: it must not block, nor call the same connection, though it may
// Start commands on another, as Start never blocks. Default: push frames
// are dropped.
func WithPushHandler(fn func(resp.Value)) Option { return func(o *options) { o.pushHandler = fn } }

// WithReaderOptions passes limits and settings to the reply reader. A reply
// over a limit fails its own call with an error matching resp.ErrLimit, and
// leaves the connection usable. Default: resp's defaults (64 MiB bulk,
// 1,048,576 elements, depth 16, 128 MiB of memory per reply). The
// connection's read buffer is 16 KiB, whatever the options.
func WithReaderOptions(opts ...resp.ReaderOption) Option {
	return func(o *options) { o.readerOptions = append(o.readerOptions, opts...) }
}

// WithSpinWait makes a caller waiting for a reply that another goroutine
// reads (see the package doc: the reader goroutine, or another caller)
// spin for up to d before it goes to sleep. A reply that comes within d is
// then taken without the caller being woken by that reader, a wake-up
// that can cost more than a loopback round trip on a virtual machine (see
// the README's figures). A caller that reads its reply itself never
// spins. The price is CPU: a spinning caller keeps a core busy for up to d
// per call, so it pays only where cores are idle and round trips are
// short. Callers spin only when GOMAXPROCS is at least 2, and at most
// GOMAXPROCS/2 of them at once in the process; the others sleep at once.
// Default: 0, no spinning.
func WithSpinWait(d time.Duration) Option { return func(o *options) { o.spinWait = d } }

// WithRedialBackoff sets how a Client waits between failed dials: the first
// redial after a break is immediate, then the wait doubles from min up to
// max, with jitter. Default: 50ms to 2s. Dial ignores it.
func WithRedialBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}
