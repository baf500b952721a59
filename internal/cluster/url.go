package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/urltext"
)

// ParseURL reads a cluster URL into the seeds and connection options of
// New:
//
//	redis+cluster://[user[:password]@]host1[:port][,host2[:port]...][/][?param=value&...]
//	rediss+cluster://...   the same, with TLS
//
// Each host is a seed; a host without a port gets 6379, and an IPv6
// address is written in brackets ("[::1]:7000"). The user and password,
// percent-encoded as in any URL, become conn.WithUsername and
// conn.WithPassword for every node. rediss+cluster adds conn.WithTLS with
// a config that verifies each node's certificate against the system's
// roots and the host it is dialled by; give WithConnOptions a
// conn.WithTLS of your own after these options to trust another CA. The
// path may only be empty, "/" or "/0": a cluster has database 0 alone.
// The parameters, each optional:
//
//	protocol=2|3           RESP version: 3 adds conn.WithRESP3 (default 2)
//	client_name=NAME       conn.WithClientName
//	dial_timeout=DURATION  conn.WithDialTimeout, in time.ParseDuration's form
//	read_timeout=DURATION  conn.WithReadTimeout
//	write_timeout=DURATION conn.WithWriteTimeout
//
// Anything else is an error, which matches conn.ErrInvalid. Errors never
// quote the password.
func ParseURL(s string) (seeds []string, connOpts []conn.Option, err error) {
	seeds, connOpts, err = parseURL(s)
	if err != nil {
		return nil, nil, invalidURL{err}
	}
	return seeds, connOpts, nil
}

// invalidURL is the error of a cluster URL that cannot be read: it
// matches conn.ErrInvalid, as an address conn cannot read does.
type invalidURL struct{ error }

func (e invalidURL) Is(target error) bool { return target == conn.ErrInvalid }
func (e invalidURL) Unwrap() error        { return e.error }

func parseURL(s string) (seeds []string, connOpts []conn.Option, err error) {
	scheme, rest, ok := strings.Cut(s, "://")
	var useTLS bool
	switch {
	case urltext.Ambiguous(s):
		// Its pieces, quoted as a bad host or path, could be pieces of
		// the password.
		return nil, nil, fmt.Errorf("cluster: URL: %w", urltext.ErrAmbiguous)
	case !ok:
		return nil, nil, errors.New("cluster: URL: want redis+cluster://host:port,... or rediss+cluster://...")
	case scheme == "redis+cluster":
	case scheme == "rediss+cluster":
		useTLS = true
	default:
		return nil, nil, fmt.Errorf("cluster: URL: unknown scheme %q (want redis+cluster or rediss+cluster)", scheme)
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hosts := "", authority
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, hosts = authority[:at+1], authority[at+1:]
	}
	// net/url decodes the user information, path and query; the hosts,
	// which it does not take in a list, are read apart.
	u, err := url.Parse("redis://" + userinfo + "seeds" + tail)
	if err != nil {
		return nil, nil, errors.New("cluster: URL: bad user information, path or parameters")
	}
	if u.Fragment != "" || strings.Contains(tail, "#") {
		return nil, nil, errors.New("cluster: URL: a fragment (#...) means nothing here")
	}
	for _, h := range strings.Split(hosts, ",") {
		seed, err := parseSeed(h)
		if err != nil {
			return nil, nil, err
		}
		seeds = append(seeds, seed)
	}
	switch u.Path {
	case "", "/", "/0":
	default:
		return nil, nil, fmt.Errorf("cluster: URL: path %q: a cluster has database 0 alone", u.Path)
	}

	if u.User != nil {
		if name := u.User.Username(); name != "" {
			connOpts = append(connOpts, conn.WithUsername(name))
		}
		if pass, ok := u.User.Password(); ok {
			connOpts = append(connOpts, conn.WithPassword(pass))
		}
	}
	if useTLS {
		// ServerName is left empty: conn sets it to each node's host.
		connOpts = append(connOpts, conn.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	for key, values := range u.Query() {
		if len(values) != 1 {
			return nil, nil, fmt.Errorf("cluster: URL: parameter %q given %d times", key, len(values))
		}
		opt, err := urlParam(key, values[0])
		if err != nil {
			return nil, nil, fmt.Errorf("cluster: URL: parameter %q: %w", key, err)
		}
		if opt != nil {
			connOpts = append(connOpts, opt)
		}
	}
	return seeds, connOpts, nil
}

// parseSeed reads one host of a cluster URL: "host", "host:port",
// "[ipv6]" or "[ipv6]:port".
func parseSeed(h string) (string, error) {
	host, port := h, "6379"
	switch {
	case h == "":
		return "", errors.New("cluster: URL: empty host in the list")
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]"):
		host = h[1 : len(h)-1]
	case strings.HasPrefix(h, "[") || strings.Count(h, ":") == 1:
		var err error
		if host, port, err = net.SplitHostPort(h); err != nil {
			return "", fmt.Errorf("cluster: URL: host %q: %w", h, err)
		}
	case strings.Contains(h, ":"):
		return "", fmt.Errorf("cluster: URL: host %q: write an IPv6 address in brackets", h)
	}
	seed := net.JoinHostPort(host, port)
	if err := checkSeed(seed); err != nil {
		return "", err
	}
	return seed, nil
}

// urlParam turns one URL parameter into its connection option.
func urlParam(key, value string) (conn.Option, error) {
	duration := func() (time.Duration, error) {
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 500ms or 5s", value)
		}
		return d, nil
	}
	switch key {
	case "protocol":
		switch value {
		case "2":
			return nil, nil
		case "3":
			return conn.WithRESP3(), nil
		}
		return nil, fmt.Errorf("%q: want 2 or 3", value)
	case "client_name":
		if value == "" || strings.ContainsAny(value, " \n") {
			return nil, fmt.Errorf("%q: want a name without spaces", value)
		}
		return conn.WithClientName(value), nil
	case "dial_timeout":
		d, err := duration()
		return conn.WithDialTimeout(d), err
	case "read_timeout":
		d, err := duration()
		return conn.WithReadTimeout(d), err
	case "write_timeout":
		d, err := duration()
		return conn.WithWriteTimeout(d), err
	}
	return nil, errors.New("unknown (want protocol, client_name, dial_timeout, read_timeout or write_timeout)")
}
