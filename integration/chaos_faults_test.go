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
