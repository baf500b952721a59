package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// wire is one of the two connections whose order the probe measures: a
// plain socket that the probe reads only when it chooses to, unlike a
// conn.Conn, whose reader goroutine reads as soon as bytes arrive. That
// leaves the arrival order to the kernel to tell (see arrivalOrder). It
// belongs to the probe's goroutine, except that abort may be called from
// anywhere.
type wire struct {
	side string // "releaser" or "waiter", for messages and the tap
	nc   net.Conn
	fd   int // the socket under nc, TLS or not, for arrivalOrder
	rd   *resp.Reader
	tap  *recordingConn // nc, as the recording sees it
}

// wireTarget is how to reach the server again for the two wires: the
// address the admin connection reached (after DNS, with the port filled
// in), and what the address URL says about TLS and credentials.
type wireTarget struct {
	network, address   string
	tls                *tls.Config // nil for plain TCP and unix sockets
	username, password string
	db                 int
}

// newWireTarget takes what conn.Dial resolved from addr, and reads the rest
// from addr, whose form conn.Dial has already checked.
func newWireTarget(addr string, admin *conn.Conn) wireTarget {
	ra := admin.RemoteAddr()
	t := wireTarget{network: ra.Network(), address: ra.String(), db: admin.DB()}
	u, err := url.Parse(addr)
	if !strings.Contains(addr, "://") || err != nil {
		return t
	}
	if u.User != nil {
		t.username = u.User.Username()
		t.password, _ = u.User.Password()
	}
	if u.Scheme == "rediss" {
		t.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	}
	return t
}

// dialWire connects, authenticates and selects the database, as conn.Dial
// does for RESP2.
func dialWire(t wireTarget, side string) (*wire, error) {
	d := net.Dialer{Timeout: probeStepTimeout}
	nc, err := d.Dial(t.network, t.address)
	if err != nil {
		return nil, fmt.Errorf("connecting the %s: %w", side, err)
	}
	fd, err := socketFD(nc)
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("connecting the %s: %w", side, err)
	}
	var rw net.Conn = nc
	if t.tls != nil {
		tc := tls.Client(nc, t.tls)
		_ = tc.SetDeadline(time.Now().Add(probeStepTimeout))
		if err := tc.Handshake(); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("connecting the %s: TLS handshake: %w", side, err)
		}
		rw = tc
	}
	tap := &recordingConn{Conn: rw, side: side}
	w := &wire{side: side, nc: tap, fd: fd, rd: resp.NewReader(tap, resp.WithRESP2()), tap: tap}
	var cmds [][]string
	if t.password != "" {
		auth := []string{"AUTH", t.password}
		if t.username != "" {
			auth = []string{"AUTH", t.username, t.password}
		}
		cmds = append(cmds, auth)
	}
	if t.db != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(t.db)})
	}
	for _, cmd := range cmds {
		v, err := w.roundTrip(cmd...)
		if err == nil {
			err = v.Err()
		}
		if err != nil {
			_ = tap.Close()
			return nil, fmt.Errorf("connecting the %s: %s: %w", side, cmd[0], err)
		}
	}
	return w, nil
}

// socketFD returns the descriptor of a TCP or unix socket. The probe uses
// it only while nc is open: it closes nc last.
func socketFD(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("%T is not a socket", nc)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	if err := raw.Control(func(f uintptr) { fd = int(f) }); err != nil {
		return 0, err
	}
	return fd, nil
}

// send writes cmds in one write, as conn's DoMulti does.
func (w *wire) send(cmds ...[]string) error {
	var buf []byte
	for _, cmd := range cmds {
		buf = resp.AppendCommand(buf, cmd...)
	}
	_ = w.nc.SetWriteDeadline(time.Now().Add(probeStepTimeout))
	if _, err := w.nc.Write(buf); err != nil {
		return fmt.Errorf("writing to the %s: %w", w.side, err)
	}
	return nil
}

// read reads the next frame, waiting at most within. A server error is a
// value, not an error. After an error the wire is unusable.
func (w *wire) read(within time.Duration) (resp.Value, error) {
	_ = w.nc.SetReadDeadline(time.Now().Add(within))
	v, err := w.rd.Read()
	if err != nil {
		return v, fmt.Errorf("reading from the %s: %w", w.side, err)
	}
	return v, nil
}

// roundTrip sends one command and reads its reply.
func (w *wire) roundTrip(args ...string) (resp.Value, error) {
	if err := w.send(args); err != nil {
		return resp.Value{}, err
	}
	return w.read(probeStepTimeout)
}

// abort makes the wire's pending and later reads and writes fail at once.
func (w *wire) abort() { _ = w.nc.SetDeadline(time.Unix(1, 0)) }

// close closes the socket.
func (w *wire) close() { _ = w.nc.Close() }

// isTimeout reports whether err is a read or write deadline that passed.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// record shows the wire's writes and reads to rec from now on, or to
// nobody if rec is nil.
func (w *wire) record(rec *tapRecording) { w.tap.rec = rec }

// recordingConn shows a wire's writes and reads to the recording while
// there is one. Like the wire, it belongs to the probe's goroutine.
type recordingConn struct {
	net.Conn
	side string
	rec  *tapRecording
}

func (c *recordingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.rec != nil && n > 0 {
		c.rec.add(c.side, "write", p[:n])
	}
	return n, err
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.rec != nil && n > 0 {
		c.rec.add(c.side, "read", p[:n])
	}
	return n, err
}
