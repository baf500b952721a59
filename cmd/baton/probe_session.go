package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

const (
	// probeStepTimeout bounds each command the probe sends and each wait
	// for a notification, so that a server that stops answering ends the
	// probe with an error naming it rather than hanging it.
	probeStepTimeout = 5 * time.Second
	// probeKeyTTL is the TTL of the probe's key, in seconds: if the probe
	// dies between SET and its release, the key still goes.
	probeKeyTTL = "60"
	// probeKeyPrefix begins the probe's key; a random suffix keeps probes
	// run side by side, and any real key, apart.
	probeKeyPrefix = "baton:probe:"
)

// How the probe tells which side heard first. The obvious way, numbering
// the reads that conn's tap (conn.WithTap) sees on each connection's reader
// goroutine, measures this process's scheduler rather than the server: the
// server writes the two sockets a few microseconds apart, and when both
// are readable by the time the Go runtime polls, it wakes their goroutines
// last-ready first. Against redis-server 7.0.15, in 5 runs of 200 rounds,
// that method counted PING+EVAL notification-first in 10-20% of the rounds
// and EVAL in 66-91%, the reverse of the server's order. Stamping each
// side's reads with the clock, the waiter in a process of its own, gave
// anything from 11% to 100% for every style, run to run. So the two
// measured connections are plain sockets that nobody reads until the
// round's order is taken, and the order comes from the kernel, without
// clocks: see arrivalOrder. In 150 runs of 200 rounds it counted 143 runs
// exactly as the server's code orders its writes, and 7 with a single
// round of EVAL or DEL the other way: on a loaded machine the kernel now
// and then delivers the two writes out of order, probably when the
// server's thread moves to another CPU between them. conn still carries
// everything else (the admin connection), and the release leaves as
// conn's DoMulti sends it: PING and the script in one write.

// probeSession is the probe's connections to one server: admin, a
// conn.Conn for the settings and the cleanup; and the two measured wires,
// the releaser, which sets and releases the key, and the waiter,
// subscribed to the key's keyspace channel. It belongs to the probe's
// goroutine.
type probeSession struct {
	addr    string // to dial
	shown   string // addr with its password hidden, for messages
	key     string
	channel string // __keyspace@<db>__:<key>

	admin    *conn.Conn
	rel, sub *wire         // nil until dialWires
	order    *arrivalOrder // nil until dialWires
	// stopAbort stops the watch that aborts the wires when ctx ends.
	stopAbort func() bool
}

// dialProbe connects the admin connection and picks the key.
func dialProbe(ctx context.Context, addr string) (*probeSession, error) {
	admin, err := conn.Dial(ctx, addr, conn.WithDialTimeout(probeStepTimeout))
	if err != nil {
		return nil, fmt.Errorf("%s: connecting: %w", redactAddr(addr), err)
	}
	var suffix [16]byte
	_, _ = rand.Read(suffix[:]) // crypto/rand.Read never fails
	key := probeKeyPrefix + hex.EncodeToString(suffix[:])
	return &probeSession{
		addr: addr, shown: redactAddr(addr), key: key, admin: admin,
		channel: fmt.Sprintf("__keyspace@%d__:%s", admin.DB(), key),
	}, nil
}

// dialWires connects the releaser and the waiter to the server the admin
// connection reached, subscribes the waiter to the key's channel, and
// starts watching their arrival order.
func (s *probeSession) dialWires(ctx context.Context) error {
	t := newWireTarget(s.addr, s.admin)
	var err error
	if s.rel, err = dialWire(t, "releaser"); err != nil {
		return fmt.Errorf("%s: %w", s.shown, err)
	}
	if s.sub, err = dialWire(t, "waiter"); err != nil {
		return fmt.Errorf("%s: %w", s.shown, err)
	}
	// Blocking reads do not watch ctx: ending it makes them fail at once.
	s.stopAbort = context.AfterFunc(ctx, func() {
		s.rel.abort()
		s.sub.abort()
	})
	v, err := s.sub.roundTrip("SUBSCRIBE", s.channel)
	if err == nil {
		err = v.Err()
	}
	if err != nil {
		return fmt.Errorf("%s: subscribing to %s: %w", s.shown, s.channel, err)
	}
	if s.order, err = newArrivalOrder(s.rel.fd, s.sub.fd); err != nil {
		return fmt.Errorf("%s: watching the arrival order: %w", s.shown, err)
	}
	return nil
}

// errNoNotification is matched when no del event reached the waiter in
// time; errNoArrival when neither wire received anything in time.
var (
	errNoNotification = errors.New("no del keyspace event reached the waiter")
	errNoArrival      = errors.New("no reply and no notification")
)

// syncWaiter reads past whatever the waiter was sent so far (the set and
// expire events of the round's SET, if the server publishes them): it
// sends PING and reads up to the pong, which the server queues after them.
// It reports whether a del event on the key's channel was among them.
func (s *probeSession) syncWaiter() (sawDel bool, err error) {
	if err := s.sub.send([]string{"PING"}); err != nil {
		return false, fmt.Errorf("%s: %w", s.shown, err)
	}
	for {
		v, err := s.sub.read(probeStepTimeout)
		if err != nil {
			return sawDel, fmt.Errorf("%s: waiting for the waiter's PING: %w", s.shown, err)
		}
		if err := v.Err(); err != nil {
			return sawDel, fmt.Errorf("%s: the waiter's PING: %w", s.shown, err)
		}
		if isPong(v) {
			return sawDel, nil
		}
		sawDel = sawDel || s.isDel(v)
	}
}

// awaitDel reads the waiter's frames up to the del event on the key's
// channel.
func (s *probeSession) awaitDel() error {
	deadline := time.Now().Add(probeStepTimeout)
	for {
		v, err := s.sub.read(time.Until(deadline))
		switch {
		case isTimeout(err):
			return fmt.Errorf("%w within %v", errNoNotification, probeStepTimeout)
		case err != nil:
			return err
		case s.isDel(v):
			return nil
		}
	}
}

// isDel reports whether v is the del event of the probe's key, as a
// RESP2 subscriber receives it.
func (s *probeSession) isDel(v resp.Value) bool {
	return v.Type == resp.Array && len(v.Elems) == 3 && v.Elems[0].Str == "message" &&
		v.Elems[1].Str == s.channel && v.Elems[2].Str == "del"
}

// isPong reports whether v answers PING, in subscribed mode (a two-element
// array) or not (+PONG).
func isPong(v resp.Value) bool {
	if v.Type == resp.Array {
		return len(v.Elems) == 2 && v.Elems[0].Str == "pong"
	}
	return v.Type == resp.SimpleString && v.Str == "PONG"
}

// do runs one command on the admin connection, bounded by
// probeStepTimeout. A server error comes back as the error, matching
// *resp.Error.
func (s *probeSession) do(ctx context.Context, args ...string) (resp.Value, error) {
	step, cancel := context.WithTimeout(ctx, probeStepTimeout)
	defer cancel()
	return s.admin.Do(step, args...)
}

// close deletes the key and closes every connection. It runs after ctx
// may have ended, so it has its own bound.
func (s *probeSession) close(ctx context.Context) error {
	if s.stopAbort != nil {
		s.stopAbort()
	}
	if s.order != nil {
		s.order.close()
	}
	for _, w := range []*wire{s.rel, s.sub} {
		if w != nil {
			w.close()
		}
	}
	_, err := s.do(context.WithoutCancel(ctx), "DEL", s.key)
	if err != nil {
		err = fmt.Errorf("%s: deleting %s: %w", s.shown, s.key, err)
	}
	_ = s.admin.Close()
	return err
}
