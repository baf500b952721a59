package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	chunkSize = 32 << 10
	// queueLen bounds each direction's queue, so that a peer that never
	// reads pushes back on the sender, as over a real link, instead of
	// growing the proxy's memory.
	queueLen = 16
)

// link is one proxied connection: a client socket, a server socket and,
// per direction, a reader that queues chunks and a writer that sends them
// when their delay is up. The queue is what keeps the chunks in order
// while each carries the latency in force when it was read.
type link struct {
	p              *Proxy
	client, server *net.TCPConn  // set by newLink, then read-only
	done           chan struct{} // closed by close, to free copiers waiting on a queue or a delay
	once           sync.Once     // makes close happen once, whichever of end, Reset or Close comes first
	open           atomic.Int32  // directions not yet at end of stream; the last one ends the link
	severed        atomic.Bool   // set by Sever: every byte is dropped from then on, for good
}

// chunk is a run of bytes read from one side and the time it may be
// written to the other.
type chunk struct {
	b   []byte
	due time.Time
}

func newLink(p *Proxy, client, server *net.TCPConn) *link {
	return &link{p: p, client: client, server: server, done: make(chan struct{})}
}

// run starts the link's four copiers on the Proxy's WaitGroup.
func (l *link) run() {
	l.open.Store(2)
	for _, d := range [][2]*net.TCPConn{{l.client, l.server}, {l.server, l.client}} {
		src, dst := d[0], d[1]
		q := make(chan chunk, queueLen)
		l.p.wg.Go(func() { l.read(src, q) })
		l.p.wg.Go(func() { l.write(dst, q) })
	}
}

func (l *link) read(src *net.TCPConn, q chan<- chunk) {
	defer close(q)
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		if n > 0 && !l.severed.Load() {
			// The delay is fixed when the bytes are read, so a change of
			// latency applies to data read after it and never reorders.
			c := chunk{b: bytes.Clone(buf[:n]), due: time.Now().Add(time.Duration(l.p.latency.Load()))}
			select {
			case q <- c:
			case <-l.done:
				return
			}
		}
		if err != nil {
			// End of stream lets the writer pass the half-close on once
			// the queue drains; any other failure ends the link now.
			if !errors.Is(err, io.EOF) {
				l.p.end(l)
			}
			return
		}
	}
}

func (l *link) write(dst *net.TCPConn, q <-chan chunk) {
	for c := range q {
		if !l.wait(c.due) || !l.waitHealed() {
			return
		}
		// Checked again here so that nothing queued before the link was
		// severed gets through after.
		if l.severed.Load() {
			continue
		}
		if _, err := dst.Write(c.b); err != nil {
			l.p.end(l)
			return
		}
	}
	if err := dst.CloseWrite(); err != nil {
		l.p.end(l)
		return
	}
	if l.open.Add(-1) == 0 {
		l.p.end(l)
	}
}

// wait sleeps until due, holding no lock, and reports false if the link
// was closed meanwhile.
func (l *link) wait(due time.Time) bool {
	d := time.Until(due)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.done:
		return false
	}
}

// waitHealed holds the writer while a blackhole lasts; false means the
// link was closed meanwhile.
func (l *link) waitHealed() bool {
	for {
		healed := l.p.partitioned()
		if healed == nil {
			return true
		}
		select {
		case <-healed:
		case <-l.done:
			return false
		}
	}
}

// closing is how a link's sockets are closed.
type closing int

const (
	orderly closing = iota // ends of stream (FIN)
	abrupt                 // resets (RST), as a crashed peer or a cut network shows
)

// close closes both sockets, which frees any copier blocked reading or
// writing them, however stuck its peer; an abrupt close sends resets
// instead of ends of stream. Close errors are ignored: the sockets are
// being thrown away and the peers learn of it either way.
func (l *link) close(how closing) {
	l.once.Do(func() {
		close(l.done)
		for _, c := range []*net.TCPConn{l.client, l.server} {
			if how == abrupt {
				_ = c.SetLinger(0)
			}
			_ = c.Close()
		}
	})
}
