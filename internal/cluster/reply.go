package cluster

import (
	"fmt"
	"strconv"

	"github.com/batonlock/baton/resp"
)

// The readers below take apart the topology replies, whose shape a hostile
// or broken server may get wrong in any way: each checks the type it is
// given and fails with an error matching resp.ErrProtocol, never a panic.

// protocolError says that a reply is not shaped as the command's documented
// reply is.
func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", resp.ErrProtocol, fmt.Sprintf(format, args...))
}

// fields returns the name and value pairs of v: a RESP3 map, or a RESP2
// array of alternating names and values. A name must be a string.
func fields(v resp.Value, what string) ([]field, error) {
	if v.Type != resp.Map && v.Type != resp.Array {
		return nil, protocolError("%s is %s, not a map or an array", what, v.Type)
	}
	if len(v.Elems)%2 != 0 {
		return nil, protocolError("%s has %d elements, not name and value pairs", what, len(v.Elems))
	}
	out := make([]field, 0, len(v.Elems)/2)
	for i := 0; i < len(v.Elems); i += 2 {
		name, ok := text(v.Elems[i])
		if !ok {
			return nil, protocolError("%s: field name %d is %s, not a string", what, i/2, v.Elems[i].Type)
		}
		out = append(out, field{name: name, value: v.Elems[i+1]})
	}
	return out, nil
}

// field is one name and value pair of a map-shaped reply.
type field struct {
	name  string
	value resp.Value
}

// list returns the elements of v, which must be an array (or a RESP3 set).
func list(v resp.Value, what string) ([]resp.Value, error) {
	if v.Type != resp.Array && v.Type != resp.Set {
		return nil, protocolError("%s is %s, not an array", what, v.Type)
	}
	return v.Elems, nil
}

// text returns the string v carries, if it is a kind of string.
func text(v resp.Value) (string, bool) {
	switch v.Type {
	case resp.Bulk, resp.SimpleString, resp.Verbatim:
		return v.Str, true
	}
	return "", false
}

// textField returns v as a string, or an error naming what it is.
func textField(v resp.Value, what string) (string, error) {
	s, ok := text(v)
	if !ok {
		return "", protocolError("%s is %s, not a string", what, v.Type)
	}
	return s, nil
}

// number returns v as an integer in [lo, hi]: an integer reply, or a
// string of decimal digits, which some versions send for numbers.
func number(v resp.Value, what string, lo, hi int64) (int, error) {
	n := v.Int
	switch v.Type {
	case resp.Integer:
	case resp.Bulk, resp.SimpleString:
		var err error
		if n, err = strconv.ParseInt(v.Str, 10, 64); err != nil {
			return 0, protocolError("%s is %q, not a number", what, v.Str)
		}
	default:
		return 0, protocolError("%s is %s, not a number", what, v.Type)
	}
	if n < lo || n > hi {
		return 0, protocolError("%s is %d, out of [%d, %d]", what, n, lo, hi)
	}
	return int(n), nil
}
