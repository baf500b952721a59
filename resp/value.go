package resp

import (
	"strconv"
	"strings"
)

// Type is the first byte of a RESP frame.
type Type byte

// The types of the values Read returns: every RESP2 and RESP3 frame type
// but the attribute, whose pairs go to the Attrs of the value they come
// before. RESP2's null bulk ($-1) and null array (*-1) are read as [Null],
// so callers test for nil replies one way.
const (
	SimpleString Type = '+'
	ErrorReply   Type = '-'
	Integer      Type = ':'
	Bulk         Type = '$'
	Array        Type = '*'
	Null         Type = '_'
	Boolean      Type = '#'
	Double       Type = ','
	BigNumber    Type = '('
	BulkError    Type = '!'
	Verbatim     Type = '='
	Map          Type = '%'
	Set          Type = '~'
	Push         Type = '>'

	// attribute frames ('|') are not values: their pairs go to the
	// Attrs of the value they come before.
	attribute Type = '|'
)

var typeNames = map[Type]string{
	SimpleString: "simple string",
	ErrorReply:   "error",
	Integer:      "integer",
	Bulk:         "bulk string",
	Array:        "array",
	Null:         "null",
	Boolean:      "boolean",
	Double:       "double",
	BigNumber:    "big number",
	BulkError:    "bulk error",
	Verbatim:     "verbatim string",
	Map:          "map",
	Set:          "set",
	attribute:    "attribute",
	Push:         "push",
}

func (t Type) String() string {
	if name, ok := typeNames[t]; ok {
		return name
	}
	return "type " + strconv.QuoteRune(rune(t))
}

// Value is one decoded reply. Which fields are set depends on Type:
//
//   - SimpleString, Bulk, BigNumber: Str holds the text (a big number's
//     decimal digits, with its sign).
//   - ErrorReply, BulkError: Str holds the message; Err returns it as *Error.
//   - Verbatim: Str holds the text and Format its three-letter format ("txt").
//   - Integer: Int. Boolean: Int is 1 or 0, see Bool.
//   - Double: Float, and Str as sent ("inf", "1.5", ...).
//   - Array, Set, Push: Elems. Map: Elems as key, value, key, value, ...
//   - Null: nothing.
//
// Attrs holds the key, value pairs of RESP3 attribute frames that came
// before the reply, if any.
type Value struct {
	Type   Type
	Str    string
	Format string
	Int    int64
	Float  float64
	Elems  []Value
	Attrs  []Value
}

// IsNull reports whether v is a null reply (RESP3 null, or RESP2 nil bulk
// or nil array).
func (v Value) IsNull() bool { return v.Type == Null }

// Bool reports whether v is a true boolean, or a non-zero integer (RESP2
// servers send booleans as 1 and 0).
func (v Value) Bool() bool {
	return (v.Type == Boolean || v.Type == Integer) && v.Int != 0
}

// Err returns the server error carried by v, or nil when v is not an error
// reply. Errors nested inside aggregates (an EXEC reply, say) stay values;
// only the value they sit in answers for them.
func (v Value) Err() error {
	if v.Type != ErrorReply && v.Type != BulkError {
		return nil
	}
	return newError(v.Str)
}

// String renders v for logs and test failures, in the spirit of redis-cli.
// It is not a wire encoding.
func (v Value) String() string {
	var b strings.Builder
	v.render(&b)
	return b.String()
}

func (v Value) render(b *strings.Builder) {
	switch v.Type {
	case SimpleString, BigNumber:
		b.WriteString(v.Str)
	case Bulk, Verbatim:
		b.WriteString(strconv.Quote(v.Str))
	case ErrorReply, BulkError:
		b.WriteString("(error) ")
		b.WriteString(v.Str)
	case Integer:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case Boolean:
		b.WriteString(strconv.FormatBool(v.Int != 0))
	case Double:
		b.WriteString(strconv.FormatFloat(v.Float, 'g', -1, 64))
	case Null:
		b.WriteString("(nil)")
	case Array, Set, Push, Map:
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			e.render(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.Type.String())
	}
}
