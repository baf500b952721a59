package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/batonlock/baton/internal/urltext"
)

// target is where and how to dial, as read from an address.
type target struct {
	network, address string
	useTLS           bool
	serverName       string
	// settings carried by a URL; explicit options override them
	username, password string
	db                 int
	// sentinels, for a redis+sentinel URL, are where to ask for the
	// primary of master (see sentinel.go), with the sentinels' own
	// credentials; address is empty then.
	sentinels                          []string
	master                             string
	sentinelUsername, sentinelPassword string
}

// parseAddr reads "host:port", "redis://[user[:pass]@]host[:port][/db]",
// "rediss://..." (TLS) or "unix://[user[:pass]@]/path[?db=N]".
func parseAddr(addr string) (target, error) {
	if !strings.Contains(addr, "://") {
		if strings.Contains(addr, "@") {
			// user:password@host:port: not quoted, as it holds a password.
			return target{}, &invalidAddress{urltext.Redacted(addr), errors.New("a user or password needs a URL (redis://user:password@host:port)")}
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return target{}, &invalidAddress{addr, fmt.Errorf("want host:port or a URL: %w", err)}
		}
		if host == "" || port == "" {
			return target{}, &invalidAddress{addr, errors.New("want host:port")}
		}
		return target{network: "tcp", address: addr, serverName: host}, nil
	}
	// Errors quote the address with its password hidden: they travel
	// into logs.
	quoted := urltext.Redacted(addr)
	u, err := urltext.Parse(addr)
	if err != nil {
		return target{}, &invalidAddress{quoted, err}
	}
	t := target{}
	if u.User != nil {
		// "redis://:secret@host" gives a password alone (default user).
		t.username = u.User.Username()
		t.password, _ = u.User.Password()
	}
	query := u.Query()
	switch u.Scheme {
	case "redis", "rediss":
		if u.Hostname() == "" {
			return target{}, &invalidAddress{quoted, errors.New("no host")}
		}
		port := u.Port()
		if port == "" {
			port = "6379"
		}
		t.network = "tcp"
		t.address = net.JoinHostPort(u.Hostname(), port)
		t.serverName = u.Hostname()
		t.useTLS = u.Scheme == "rediss"
		if p := strings.Trim(u.Path, "/"); p != "" {
			if t.db, err = parseDB(p); err != nil {
				return target{}, &invalidAddress{quoted, err}
			}
		}
	case "redis+sentinel", "rediss+sentinel":
		if err := t.parseSentinel(u); err != nil {
			return target{}, &invalidAddress{quoted, err}
		}
	case "unix":
		if u.Path == "" {
			return target{}, &invalidAddress{quoted, errors.New("no socket path")}
		}
		t.network, t.address = "unix", u.Path
	default:
		return target{}, &invalidAddress{quoted, fmt.Errorf("unknown scheme %q (want redis, rediss, redis+sentinel, rediss+sentinel or unix)", u.Scheme)}
	}
	for key := range query {
		switch {
		case key == "db":
			if t.db, err = parseDB(query.Get("db")); err != nil {
				return target{}, &invalidAddress{quoted, err}
			}
		case key == "sentinel_username" && t.sentinels != nil:
			t.sentinelUsername = query.Get(key)
		case key == "sentinel_password" && t.sentinels != nil:
			t.sentinelPassword = query.Get(key)
		default:
			return target{}, &invalidAddress{quoted, fmt.Errorf("unknown parameter %q", key)}
		}
	}
	return t, nil
}

func parseDB(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad database number %q", s)
	}
	return n, nil
}

// resolve merges the address's settings under the explicit options.
func (t target) resolve(opts []Option) options {
	o := defaultOptions()
	o.username, o.password, o.db = t.username, t.password, t.db
	if t.useTLS {
		o.tlsConfig = &tls.Config{ServerName: t.serverName, MinVersion: tls.VersionTLS12}
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.tlsConfig != nil && o.tlsConfig.ServerName == "" && !o.tlsConfig.InsecureSkipVerify {
		o.tlsConfig = o.tlsConfig.Clone()
		o.tlsConfig.ServerName = t.serverName
	}
	return o
}
