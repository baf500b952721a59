package conn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/batonlock/baton/internal/urltext"
	"github.com/batonlock/baton/resp"
)

// Dial connects to addr and runs the handshake. addr is "host:port" or a
// URL: redis://[user[:password]@]host[:port][/db], rediss://... for TLS,
// unix://[user[:password]@]/path/to/socket[?db=N], or
// redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/name[/db]
// (and rediss+sentinel://) for the primary that Redis Sentinel names (see
// the package doc). Options override what the URL says. The user and password are percent-encoded, as in any URL; one
// with a raw '/', '?', '#' or '@' after the host cannot be read and is
// refused. No error quotes the password.
func Dial(ctx context.Context, addr string, opts ...Option) (*Conn, error) {
	if ctx == nil {
		return nil, errors.New("conn: Dial: nil context")
	}
	t, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	return dialTarget(ctx, urltext.NewAddress(addr), t, t.resolve(opts))
}

// dialTarget dials t, which was read from addr; addr is for errors
// alone, which quote it with its passwords hidden.
func dialTarget(ctx context.Context, addr urltext.Address, t target, o options) (*Conn, error) {
	if len(t.sentinels) > 0 {
		c, _, err := dialPrimary(ctx, t, o, &sentinelView{})
		if err != nil {
			return nil, dialFailure(addr, err)
		}
		return c, nil
	}
	if o.dialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.dialTimeout)
		defer cancel()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, t.network, t.address)
	if err != nil {
		return nil, &DialError{Addr: addr.String(), Err: err}
	}
	if o.tlsConfig != nil {
		tc := tls.Client(nc, o.tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, &DialError{Addr: addr.String(), Err: fmt.Errorf("TLS handshake: %w", err)}
		}
		nc = tc
	}
	c := newConn(nc, o)
	if err := c.handshake(ctx); err != nil {
		_ = c.Close()
		return nil, &DialError{Addr: addr.String(), Err: fmt.Errorf("handshake: %w", err)}
	}
	return c, nil
}

// handshake sends HELLO or AUTH, SELECT and CLIENT SETNAME in one write and
// checks every reply.
func (c *Conn) handshake(ctx context.Context) error {
	o := c.opts
	var cmds [][]string
	if o.resp3 {
		hello := []string{"HELLO", "3"}
		if o.password != "" {
			user := o.username
			if user == "" {
				user = "default"
			}
			hello = append(hello, "AUTH", user, o.password)
		}
		if o.clientName != "" {
			hello = append(hello, "SETNAME", o.clientName)
		}
		cmds = append(cmds, hello)
	} else {
		if o.password != "" {
			auth := []string{"AUTH", o.password}
			if o.username != "" {
				auth = []string{"AUTH", o.username, o.password}
			}
			cmds = append(cmds, auth)
		}
		if o.clientName != "" {
			cmds = append(cmds, []string{"CLIENT", "SETNAME", o.clientName})
		}
	}
	if o.db != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(o.db)})
	}
	if len(cmds) == 0 {
		return nil
	}
	replies, err := c.DoMulti(ctx, cmds...)
	if err != nil {
		return err
	}
	for i, r := range replies {
		err := r.Err()
		if err == nil {
			continue
		}
		var reply *resp.Error
		if o.password != "" && i == 0 && errors.As(err, &reply) {
			err = withheld(reply)
		}
		return fmt.Errorf("%s: %w", cmds[i][0], err)
	}
	return nil
}

// withheld is the error reply to a command that carried the password
// (AUTH, HELLO's AUTH), with its code and without its text: a server
// that does not know the command repeats its arguments in the reply
// ("unknown command `HELLO`, with args beginning with: ..."), and the
// error travels into logs. The code is what callers branch on
// (WRONGPASS, NOAUTH, NOPERM, ERR).
func withheld(reply *resp.Error) *resp.Error {
	return &resp.Error{Prefix: reply.Prefix, Message: reply.Prefix + " (the server's text is withheld: it may repeat the password sent)"}
}
