// Package urltext reads the user information of a server URL apart from
// the rest, so that no error, log line or report of baton prints a
// password: conn, cluster and the command line quote an address only as
// Redacted gives it.
//
// A password is percent-encoded in a URL, as any user information is. One
// written raw with '/', '?', '#' or '@' in it cannot be told from the
// host, path or parameters that follow, and a parser would quote its
// pieces as a bad port or path; Ambiguous finds such an address, which
// is refused without being quoted.
package urltext

import (
	"errors"
	"net/url"
	"strings"
)

// ErrAmbiguous is the error of an ambiguous address (see Ambiguous).
var ErrAmbiguous = errors.New("an '@' after the host: percent-encode '/', '?', '#' and '@' in a user name, password or parameter")

// Hidden stands for a password in an address that is quoted.
const Hidden = "xxxxx"

// split returns the part of s after "scheme://" as its user information
// (without the '@'; empty when there is none) and the rest, and whether s
// has a scheme at all. The user information ends at the authority's last
// '@', and the authority at its first '/', '?' or '#'.
func split(s string) (scheme, userinfo, rest string, ok bool) {
	scheme, after, ok := strings.Cut(s, "://")
	if !ok {
		return "", "", s, false
	}
	end := strings.IndexAny(after, "/?#")
	if end < 0 {
		end = len(after)
	}
	at := strings.LastIndexByte(after[:end], '@')
	if at < 0 {
		return scheme, "", after, true
	}
	return scheme, after[:at], after[at+1:], true
}

// Redacted is s with the password of a URL replaced by Hidden; the user
// name stays. An address that is not a URL has no password and comes back
// as it is, unless it holds an '@' (a user or password written without a
// scheme); an ambiguous one (see Ambiguous) is not quoted at all.
//
// The value of every parameter whose name holds "password" (a sentinel's,
// say: sentinel_password) is replaced by Hidden too.
func Redacted(s string) string {
	scheme, userinfo, rest, ok := split(s)
	switch {
	case !ok && strings.ContainsRune(s, '@'):
		return "(an address with user information, not a URL)"
	case Ambiguous(s):
		return "(a URL whose user information is not percent-encoded)"
	case !ok:
		return s
	}
	rest = hideParameterPasswords(rest)
	user, _, hasPassword := strings.Cut(userinfo, ":")
	switch {
	case userinfo == "":
		return scheme + "://" + rest
	case !hasPassword:
		return scheme + "://" + userinfo + "@" + rest
	}
	return scheme + "://" + user + ":" + Hidden + "@" + rest
}

// hideParameterPasswords replaces the values of the parameters of rest
// (what follows a URL's user information) whose name holds "password".
func hideParameterPasswords(rest string) string {
	before, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	params := strings.Split(query, "&")
	for i, p := range params {
		name, _, _ := strings.Cut(p, "=")
		if unescaped, err := url.QueryUnescape(name); err == nil {
			name = unescaped
		}
		if strings.Contains(strings.ToLower(name), "password") {
			params[i], _, _ = strings.Cut(p, "=")
			params[i] += "=" + Hidden
		}
	}
	out := before + "?" + strings.Join(params, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// Ambiguous reports whether the URL s has an '@' after its authority (a
// password written raw with '/', '?' or '#' in it, or an '@' in a
// parameter, which must then be written %40) or before its "://". Quoting any piece of such
// an address may quote a piece of the password.
func Ambiguous(s string) bool {
	scheme, _, rest, ok := split(s)
	return ok && strings.ContainsAny(scheme+rest, "@")
}

// Parse is url.Parse, with an error that quotes no password: net/url
// quotes the whole address in its errors, and a bad escape in the user
// information quotes a piece of it.
func Parse(s string) (*url.URL, error) {
	if Ambiguous(s) {
		return nil, ErrAmbiguous
	}
	u, err := url.Parse(s)
	if err == nil {
		return u, nil
	}
	// The same address with the password hidden finds a fault elsewhere
	// (quoting only what follows the user information); one that parses
	// then had its fault in the user information.
	var urlErr *url.Error
	if _, again := url.Parse(Redacted(s)); errors.As(again, &urlErr) {
		return nil, urlErr.Err
	}
	return nil, errors.New("bad user information: percent-encode the user name and password")
}
