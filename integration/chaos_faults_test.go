package integration_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonlock/baton/resp"
)

// The faults a chaos round injects, by weight.
var chaosFaults = []weighted[string]{
	{4, "kill-normal"},  // CLIENT KILL TYPE normal: every command connection
	{5, "kill-addr"},    // CLIENT KILL ADDR of one connection, picked at random
	{4, "pause"},        // CLIENT PAUSE <ms> WRITE
	{3, "script-flush"}, // SCRIPT FLUSH: every EVALSHA meets NOSCRIPT
	{4, "kill-pubsub"},  // CLIENT KILL TYPE pubsub: every subscriber
	{2, "psubscribe"},   // a PSUBSCRIBE * connection, kept for a while
	{4, "oom"},          // maxmemory 1 for a moment: every write that adds memory is refused
	// For 200ms to 1.5s (see faulter.outage), every connection open is
	// cut and every new one accepted and cut at once: a load balancer
	// with no server behind it.
	{3, "accept-close"},
	// For 200ms to 1.5s, every connection open is cut and every new one
	// accepted and never answered: clients redial into a server frozen
	// mid-handshake (its AUTH or HELLO, the servers requiring a password).
	{3, "frozen-handshake"},
	// A lock some lease holds deleted or overwritten by a client that
	// ignores it (see faulter.loseLock): the lease must hear of it.
	{8, "lose-lock"},
}

// faulter injects random faults into the server at addr, from admin
// connections of its own, recording each.
type faulter struct {
	t      *testing.T // the faults of a cluster fail it; run is called on its goroutine
	target chaosTarget
	keys   []string // the round's
	addr   string   // the node the fault being injected strikes
	rng    *rand.Rand
	rec    *chaosRecorder
	// psub is the PSUBSCRIBE * connection while one is kept, and
	// draining the goroutine that reads it.
	psub     net.Conn
	psubEnd  time.Time
	draining sync.WaitGroup
	// pausedUntil is when the last CLIENT PAUSE injected ends. A failover
	// waits for it: a replica paused so (Redis 7.0) acknowledges writes
	// it has read but not yet applied, and loses them if its primary dies
	// then, which no WAIT can guard against (see lock.WithReplicaAck).
	pausedUntil time.Time
}

// run injects a fault every 50 to 500ms until until.
func (f *faulter) run(until time.Time) {
	defer f.endPsub()
	for {
		wait := time.Duration(50+f.rng.IntN(450)) * time.Millisecond
		if time.Until(until) < wait {
			time.Sleep(max(time.Until(until), 0))
			return
		}
		time.Sleep(wait)
		if f.psub != nil && time.Now().After(f.psubEnd) {
			f.endPsub()
		}
		faults := append(append([]weighted[string](nil), chaosFaults...), f.target.faults...)
		f.inject(pick(f.rng, faults...))
	}
}

func (f *faulter) inject(kind string) {
	r := chaosRecord{Kind: recFault, ID: f.rec.newID("fault"), Call: now(), Note: kind}
	nodes := f.target.nodes()
	f.addr = nodes[f.rng.IntN(len(nodes))]
	if len(nodes) > 1 {
		r.Note += " on " + f.addr
	}
	var err error
	if strike := f.target.strike[kind]; strike != nil {
		r.Note = kind + " " + strike(f)
	}
	switch kind {
	case "kill-normal":
		_, err = f.target.do(f.addr, "CLIENT", "KILL", "TYPE", "normal")
	case "kill-addr":
		var v resp.Value
		if v, err = f.target.do(f.addr, "CLIENT", "LIST", "TYPE", "normal"); err == nil {
			var addrs []string
			for line := range strings.Lines(v.Str) {
				for field := range strings.FieldsSeq(line) {
					if a, ok := strings.CutPrefix(field, "addr="); ok {
						addrs = append(addrs, a)
					}
				}
			}
			if len(addrs) > 0 {
				target := addrs[f.rng.IntN(len(addrs))]
				r.Note += " " + target
				_, err = f.target.do(f.addr, "CLIENT", "KILL", "ADDR", target)
			}
		}
	case "pause":
		ms := 10 + f.rng.IntN(290)
		r.Note += fmt.Sprintf(" %dms", ms)
		f.pausedUntil = time.Now().Add(time.Duration(ms) * time.Millisecond)
		_, err = f.target.do(f.addr, "CLIENT", "PAUSE", fmt.Sprint(ms), "WRITE")
	case "script-flush":
		_, err = f.target.do(f.addr, "SCRIPT", "FLUSH")
	case "kill-pubsub":
		_, err = f.target.do(f.addr, "CLIENT", "KILL", "TYPE", "pubsub")
	case "oom":
		// The policy Open requires stays (noeviction): the server
		// refuses writes rather than evict. A script stops at its first
		// write that adds memory, with nothing written.
		ms := 50 + f.rng.IntN(200)
		r.Note += fmt.Sprintf(" %dms", ms)
		if _, err = f.target.do(f.addr, "CONFIG", "SET", "maxmemory", "1"); err == nil {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			_, err = f.target.do(f.addr, "CONFIG", "SET", "maxmemory", "0")
		}
	case "psubscribe":
		if f.psub == nil {
			err = f.startPsub(time.Duration(200+f.rng.IntN(2000)) * time.Millisecond)
		}
	case "lose-lock":
		err = f.loseLock(&r)
	case "accept-close", "frozen-handshake":
		var how string
		how, err = f.outage(kind, time.Duration(200+f.rng.IntN(1300))*time.Millisecond)
		r.Note += " " + how
	}
	if err != nil {
		r.Err = err.Error()
	}
	r.Ret = now()
	f.rec.add(r)
}

// startPsub opens a connection that subscribes to every channel, and
// reads (and drops) what it gets until endPsub, after keep.
func (f *faulter) startPsub(keep time.Duration) error {
	c, err := net.DialTimeout("tcp", f.addr, time.Second)
	if err != nil {
		return err
	}
	var cmds []byte
	if f.target.pass != "" {
		cmds = resp.AppendCommand(cmds, "AUTH", f.target.pass)
	}
	if _, err := c.Write(resp.AppendCommand(cmds, "PSUBSCRIBE", "*")); err != nil {
		c.Close()
		return err
	}
	f.psub, f.psubEnd = c, time.Now().Add(keep)
	f.draining.Go(func() { _, _ = io.Copy(io.Discard, c) })
	return nil
}

func (f *faulter) endPsub() {
	if f.psub == nil {
		return
	}
	f.psub.Close()
	f.draining.Wait()
	f.psub = nil
	f.rec.add(chaosRecord{Kind: recFault, ID: f.rec.newID("fault"), Call: now(), Ret: now(), Note: "psubscribe ends"})
}

// outage makes the node at f.addr refuse clients for d (capped at the
// target's maxOutage), as kind says, and returns once it serves them
// again, saying how it went about it:
//
//   - "accept-close": each new connection is accepted and cut at once.
//     Through the node's fault proxy: Refuse, and Reset of the open
//     connections, for a reset with no byte before it, as from a load
//     balancer with no server behind it. Without one: the open client
//     connections killed and maxclients 1, so that the server itself
//     accepts each new connection, writes "max number of clients
//     reached" and closes it.
//   - "frozen-handshake": each new connection is accepted and its
//     handshake never answered until the outage ends. Through the
//     proxy: Blackhole, and Reset of the open connections, so that every
//     connection during the outage is a new one, whose AUTH the proxy
//     holds until it ends. Without one: the open client connections
//     killed and CLIENT PAUSE ALL, which holds every command, AUTH and
//     HELLO included.
//
// Without a proxy, the connections of the node's sentinels are spared
// (they would see the node down, and fail it over), and the replication
// links are never client connections.
func (f *faulter) outage(kind string, d time.Duration) (string, error) {
	if f.target.maxOutage > 0 {
		d = min(d, f.target.maxOutage)
	}
	how := d.String()
	if p := f.target.proxies[f.addr]; p != nil {
		if kind == "accept-close" {
			p.Refuse(true)
		} else {
			p.Blackhole(true)
		}
		how += fmt.Sprintf(", through the proxy, %d connections reset", p.Reset())
		time.Sleep(d)
		p.Refuse(false)
		p.Blackhole(false)
		return how, nil
	}
	s, err := dialAdmin(f.addr, f.target.pass)
	if err != nil {
		return how, err
	}
	defer s.close()
	kill, err := s.clientsToKill()
	if err != nil {
		return how, err
	}
	how += fmt.Sprintf(", %d connections killed", len(kill))
	if kind == "frozen-handshake" {
		how += ", CLIENT PAUSE ALL"
		// A paused replica acknowledges writes it has not applied (see
		// pausedUntil).
		f.pausedUntil = time.Now().Add(d)
		if _, err := s.do(append(kill, []string{"CLIENT", "PAUSE", fmt.Sprint(d.Milliseconds()), "ALL"})...); err != nil {
			return how, err
		}
		time.Sleep(d)
		return how, nil
	}
	how += ", maxclients 1"
	v, err := s.do([]string{"CONFIG", "GET", "maxclients"})
	if err != nil {
		return how, err
	}
	if len(v[0].Elems) != 2 {
		return how, fmt.Errorf("CONFIG GET maxclients: %v", v[0])
	}
	was := v[0].Elems[1].Str
	// In one write: no connection is accepted between the kills and the
	// limit. The limit counts this connection, so that the node takes
	// no other.
	if _, err := s.do(append(kill, []string{"CONFIG", "SET", "maxclients", "1"})...); err != nil {
		return how, err
	}
	time.Sleep(d)
	if _, err := s.do([]string{"CONFIG", "SET", "maxclients", was}); err != nil {
		// The node takes no other connection to set it back: a round
		// whose node stays so fails on its own.
		return how, fmt.Errorf("setting maxclients back to %s: %w", was, err)
	}
	return how, nil
}

// adminSession is one admin connection to a node, kept through a fault
// that must be undone on the connection that did it: a node that takes
// no new connection takes none to undo it either.
type adminSession struct {
	c net.Conn
	r *resp.Reader
}

// dialAdmin opens an admin session on addr, authenticated with pass
// unless it is "".
func dialAdmin(addr, pass string) (*adminSession, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	s := &adminSession{c: c, r: resp.NewReader(c)}
	if pass != "" {
		if _, err := s.do([]string{"AUTH", pass}); err != nil {
			c.Close()
			// Not err, which might quote the command.
			return nil, fmt.Errorf("AUTH to %s refused", addr)
		}
	}
	return s, nil
}

func (s *adminSession) close() { _ = s.c.Close() }

// do sends cmds in one write and reads their replies; an error reply is
// an error, naming the command's first word alone.
func (s *adminSession) do(cmds ...[]string) ([]resp.Value, error) {
	if err := s.c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	var buf []byte
	for _, c := range cmds {
		buf = resp.AppendCommand(buf, c...)
	}
	if _, err := s.c.Write(buf); err != nil {
		return nil, err
	}
	replies := make([]resp.Value, len(cmds))
	for i := range cmds {
		v, err := s.r.Read()
		if err != nil {
			return nil, err
		}
		if err := v.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", cmds[i][0], err)
		}
		replies[i] = v
	}
	return replies, nil
}

// clientsToKill returns a CLIENT KILL ID for each client connection of
// the node (normal and pubsub) but this session's own and the
// sentinels' (named sentinel-<id>-cmd and sentinel-<id>-pubsub).
func (s *adminSession) clientsToKill() ([][]string, error) {
	v, err := s.do([]string{"CLIENT", "ID"}, []string{"CLIENT", "LIST", "TYPE", "normal"}, []string{"CLIENT", "LIST", "TYPE", "pubsub"})
	if err != nil {
		return nil, err
	}
	own := fmt.Sprint(v[0].Int)
	var kill [][]string
	for _, list := range v[1:] {
		for line := range strings.Lines(list.Str) {
			var id, name string
			for field := range strings.FieldsSeq(line) {
				if k, val, ok := strings.Cut(field, "="); ok {
					switch k {
					case "id":
						id = val
					case "name":
						name = val
					}
				}
			}
			if id != "" && id != own && !strings.HasPrefix(name, "sentinel-") {
				kill = append(kill, []string{"CLIENT", "KILL", "ID", id})
			}
		}
	}
	return kill, nil
}
