package faultproxy

import "time"

// SetLatency delays every chunk forwarded in either direction by d, from
// the next chunk read on; chunks already queued keep their delay, and the
// order of the bytes is kept. A d of 0 or less removes the delay, the
// default.
func (p *Proxy) SetLatency(d time.Duration) {
	p.latency.Store(int64(max(d, 0)))
}

// Reset closes every open proxied connection abruptly on both sides
// (SO_LINGER 0, so each peer gets ECONNRESET) and returns how many it
// closed. New connections are still accepted.
func (p *Proxy) Reset() int {
	p.mu.Lock()
	links := p.takeLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.close(true)
	}
	return len(links)
}

// Blackhole, while on, reads the bytes from both sides of every connection
// and drops them, forwarding nothing and keeping the connections open: a
// partitioned link, which neither peer can tell from a slow one. New
// connections are accepted and blackholed too. Turning it off resumes
// forwarding; the bytes dropped meanwhile stay dropped.
func (p *Proxy) Blackhole(on bool) {
	p.blackhole.Store(on)
}

// Refuse, while on, resets every new connection as soon as it is accepted,
// like a server that is down; existing connections are untouched.
func (p *Proxy) Refuse(on bool) {
	p.refuse.Store(on)
}

// Sever makes every open connection half-open for good, as when the
// server's host vanishes or a middlebox forgets the connection: from now
// on the bytes of both sides are read and dropped, and the proxy keeps
// both sockets open, so that neither peer is told; only Reset or Close
// ends them. It returns how many it severed. New connections are
// forwarded as usual, as they would reach a server that took the old
// one's place.
func (p *Proxy) Sever() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.conns {
		l.severed.Store(true)
	}
	return len(p.conns)
}
