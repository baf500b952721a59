package urltext

import (
	"fmt"
	"log/slog"
)

// Address is a server address that prints only with its passwords
// hidden: every fmt verb (%v, %s, %q, %+v, %#v, ...), String, GoString,
// text and JSON marshalling and slog print Redacted's form, so that an
// error, log line or event that wraps one cannot say a password however
// it is written. The address as given is for dialling alone, and only
// Raw returns it.
//
// The zero Address is empty.
type Address struct {
	shown string
	// raw is behind a pointer so that even fmt's reflection, which
	// prints the fields of a struct that holds an Address unexported
	// (and so cannot call its methods), shows a pointer and not it.
	raw *rawAddress
}

type rawAddress struct{ s string }

// NewAddress returns s as an Address.
func NewAddress(s string) Address { return Address{shown: Redacted(s), raw: &rawAddress{s}} }

// Raw is the address as given, passwords included: to dial it, never to
// print it.
func (a Address) Raw() string {
	if a.raw == nil {
		return ""
	}
	return a.raw.s
}

// String is the address with its passwords hidden.
func (a Address) String() string { return a.shown }

// GoString is String quoted, for %#v.
func (a Address) GoString() string { return fmt.Sprintf("%q", a.shown) }

// Format prints the redacted address for every verb, as a string would
// print: %q quotes it, widths and flags apply.
func (a Address) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprint(f, a.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), a.shown)
}

// MarshalText gives the redacted address, for encoding/json and the
// like.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.shown), nil }

// LogValue gives the redacted address to log/slog.
func (a Address) LogValue() slog.Value { return slog.StringValue(a.shown) }
