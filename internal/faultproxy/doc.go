// Package faultproxy puts a TCP proxy between baton's clients and a real
// redis-server so that integration tests can inject the faults a network
// produces: latency, connection resets, a partition that heals, a link
// left half-open for good, and refused connections. It owns its listening socket, both sockets of every
// connection it proxies and every goroutine that copies between them. It
// knows nothing of RESP: a fault hits whatever bytes are in flight, as it
// would on a real network.
//
// Concurrency: every method of a Proxy is safe for concurrent use, Close
// included. Latency applies to the bytes read after SetLatency; a
// blackhole holds every byte not yet written when it begins, until it
// ends; Sever drops every byte of the connections open at the call, for
// good; Refuse applies to the connections accepted after it. Every goroutine the Proxy starts (the accept loop, one dialler per
// accepted connection, and a reader and a writer per direction of each
// proxied connection) belongs to it, and Close stops them and waits for
// them. Close is bounded even when a peer never reads, because it closes
// the sockets under the copiers instead of waiting for them to drain.
package faultproxy
