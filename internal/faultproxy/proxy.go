package faultproxy

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// acceptPause is how long the accept loop waits after a failed Accept, so
// that running out of descriptors does not make it spin until Close.
const acceptPause = 10 * time.Millisecond

// Proxy forwards every connection accepted on Addr to its target, with the
// faults its methods set.
type Proxy struct {
	ln     *net.TCPListener // set by Start, then read-only
	target string           // set by Start, then read-only

	// ctx is cancelled by Close, so that a dial in flight does not hold
	// Close up; ctx and cancel are set by Start, then read-only.
	ctx    context.Context
	cancel context.CancelFunc

	// The faults are atomics rather than under mu because every chunk and
	// every accepted connection reads them.
	latency atomic.Int64 // nanoseconds
	refuse  atomic.Bool

	accepted atomic.Int64 // connections accepted so far, refused ones included

	// healed is open while a blackhole lasts and closed when it ends;
	// nil when there is none. Guarded by mu.
	healed chan struct{}

	wg sync.WaitGroup // every goroutine the Proxy starts; Close waits on it

	mu     sync.Mutex         // guards conns, closed and healed
	conns  map[*link]struct{} // the open proxied connections; guarded by mu
	closed bool               // set once by Close; guarded by mu
}

// Start listens on 127.0.0.1:0 and forwards every accepted connection to
// target (host:port). It dials target only when a connection arrives, so a
// target that is down shows as a reset to the client, not as an error here.
func Start(target string) (*Proxy, error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listening for %s: %w", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{ln: ln, target: target, ctx: ctx, cancel: cancel, conns: make(map[*link]struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Accepted returns how many connections the proxy has accepted so far,
// those it refused (Refuse) included: how often clients dialled.
func (p *Proxy) Accepted() int { return int(p.accepted.Load()) }

// Addr returns the address the proxy listens on, for clients to dial.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// Conns returns how many proxied connections are open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops accepting, closes every proxied connection and waits for
// every goroutine the Proxy started to end. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := p.takeLocked()
	p.mu.Unlock()

	// Cancelling before closing the listener lets the accept loop tell
	// Close from a failed Accept.
	p.cancel()
	err := p.ln.Close()
	for _, l := range links {
		l.close(orderly)
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("faultproxy: closing the listener on %s: %w", p.Addr(), err)
	}
	return nil
}

// takeLocked empties conns and returns what it held, so that the caller
// can close the connections after unlocking mu: closing one makes its
// goroutines call end, which takes mu.
func (p *Proxy) takeLocked() []*link {
	links := make([]*link, 0, len(p.conns))
	for l := range p.conns {
		links = append(links, l)
	}
	clear(p.conns)
	return links
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.AcceptTCP()
		if err != nil {
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(acceptPause):
				continue
			}
		}
		p.accepted.Add(1)
		if p.refuse.Load() {
			abort(c)
			continue
		}
		p.wg.Go(func() { p.connect(c) })
	}
}

// connect dials the target for client and starts forwarding between them.
func (p *Proxy) connect(client *net.TCPConn) {
	var d net.Dialer
	c, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		// A reset is what the client would get from a server that is down.
		abort(client)
		return
	}
	// A tcp dial always yields a *net.TCPConn; checking keeps a change in
	// net from becoming a panic in someone's test.
	server, ok := c.(*net.TCPConn)
	if !ok {
		abort(client)
		_ = c.Close()
		return
	}
	l := newLink(p, client, server)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.close(orderly)
		return
	}
	p.conns[l] = struct{}{}
	p.mu.Unlock()
	l.run()
}

// end forgets l and closes it; every copier that stops calls it, so a
// link ends as soon as either side fails.
func (p *Proxy) end(l *link) {
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
	l.close(orderly)
}

// abort closes c with SO_LINGER 0, so that its peer gets a reset rather
// than an orderly end of stream. Errors are ignored: the socket is being
// thrown away and its peer learns of it either way.
func abort(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}
