package redistest

import (
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// SecretForms are the ways a password may be printed: as it is, and
// percent-encoded as a URL's query, path or user information holds it,
// each once.
func SecretForms(secret string) []string {
	userinfo := strings.TrimPrefix(url.UserPassword("", secret).String(), ":")
	var forms []string
	for _, f := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), userinfo} {
		if !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	return forms
}

// RequireNoSecret fails t if err, or any error it wraps (through Unwrap,
// and the Unwrap []error of errors.Join), says secret, in any of its
// SecretForms: a caller who unwraps an error and prints a part of it must
// not find a password either.
func RequireNoSecret(t testing.TB, err error, secret string) {
	t.Helper()
	forms := SecretForms(secret)
	for _, e := range errorChain(err) {
		for _, form := range forms {
			if strings.Contains(e.Error(), form) {
				t.Fatalf("an error says the password %q: %q (in %T)", secret, e.Error(), e)
			}
		}
	}
}

func errorChain(err error) []error {
	if err == nil {
		return nil
	}
	chain := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		chain = append(chain, errorChain(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			chain = append(chain, errorChain(e)...)
		}
	}
	return chain
}

// AddressMistakes are addresses with secret as their password, each with a
// mistake a user makes (a database out of range or not a number, an
// unknown parameter, a bad port, a cluster URL where one server is meant,
// and the reverse), or a password written so that no parser can tell it
// from what follows (raw '/', '?', '@', a bad escape, user information
// without a URL). host is "host:port"; a dial, where one is made, goes
// there. Every error they cause must keep secret to itself
// (RequireNoSecret).
func AddressMistakes(host, secret string) []string {
	return []string{
		"redis://app:" + secret + "@" + host + "/99999999999999999999",
		"redis://app:" + secret + "@" + host + "/0?timeout=1s",
		"redis://app:" + secret + "@127.0.0.1:99999",
		"redis://app:" + secret + "@127.0.0.1:port",
		"rediss://app:" + secret + "@" + host + "/zero",
		"redis+cluster://app:" + secret + "@" + host + "/1",
		"redis+cluster://app:" + secret + "@" + host + "?timeout=1s",
		"rediss+cluster://app:" + secret + "@127.0.0.1:99999",
		"http://app:" + secret + "@" + host,
		"redis://app:" + secret + "/x@" + host,
		"redis://app:12/" + secret + "@" + host,
		"redis://app:" + secret + "?x@" + host,
		"redis+cluster://app:" + secret + "/x@" + host,
		"redis://app:" + secret + "%zz@" + host,
		"redis+cluster://app:" + secret + "%zz@" + host,
		"app:" + secret + "@" + host,
		"app:" + secret + "@redis://" + host,
	}
}

// ClosedAddr is a loopback "host:port" that nothing listens on (it did a
// moment ago), for a dial that must fail at once.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
