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
		l.close(abrupt)
	}
	return len(links)
}

// Blackhole, while on, forwards nothing on any connection, old or new,
// and keeps them all open: a partitioned link, which neither peer can tell
// from a slow one. The bytes are held, not dropped, up to each direction's
// queue, and then the senders are pushed back on; turning the blackhole
// off delivers them in order, as TCP does once a partition heals within
// its retransmission time. (A peer that is gone for good is Sever.)
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.healed == nil:
		p.healed = make(chan struct{})
	case !on && p.healed != nil:
		close(p.healed)
		p.healed = nil
	}
}

// partitioned returns the channel that closes when the blackhole in force
// ends, or nil when there is none.
func (p *Proxy) partitioned() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.healed == nil {
		return nil
	}
	return p.healed
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
