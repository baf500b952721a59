package resp_test

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

// Shorthands for expected values.
func simple(s string) resp.Value { return resp.Value{Type: resp.SimpleString, Str: s} }
func bulk(s string) resp.Value   { return resp.Value{Type: resp.Bulk, Str: s} }
func integer(n int64) resp.Value { return resp.Value{Type: resp.Integer, Int: n} }
func null() resp.Value           { return resp.Value{Type: resp.Null} }

func agg(t resp.Type, elems ...resp.Value) resp.Value {
	if elems == nil {
		elems = []resp.Value{}
	}
	return resp.Value{Type: t, Elems: elems}
}

func withAttrs(v resp.Value, attrs ...resp.Value) resp.Value {
	v.Attrs = attrs
	return v
}

type goodFrame struct {
	name string
	in   string
	opts []resp.ReaderOption
	want resp.Value
}

// goodFrames are single frames that must decode to want. The fuzz test
// seeds its corpus with them too.
var goodFrames = []goodFrame{
	// Simple strings.
	{name: "simple OK", in: "+OK\r\n", want: simple("OK")},
	{name: "simple empty", in: "+\r\n", want: simple("")},
	{name: "simple with spaces", in: "+hello world\r\n", want: simple("hello world")},
	{name: "simple binary", in: "+a\x00\xffb\r\n", want: simple("a\x00\xffb")},

	// Errors: the message as sent; see error_test.go for *resp.Error.
	{name: "error", in: "-ERR unknown command 'FOO'\r\n", want: resp.Value{Type: resp.ErrorReply, Str: "ERR unknown command 'FOO'"}},
	{name: "error empty", in: "-\r\n", want: resp.Value{Type: resp.ErrorReply}},

	// Integers.
	{name: "integer zero", in: ":0\r\n", want: integer(0)},
	{name: "integer", in: ":1000\r\n", want: integer(1000)},
	{name: "integer negative", in: ":-1\r\n", want: integer(-1)},
	{name: "integer max", in: ":9223372036854775807\r\n", want: integer(math.MaxInt64)},
	{name: "integer min", in: ":-9223372036854775808\r\n", want: integer(math.MinInt64)},

	// Bulk strings.
	{name: "bulk", in: "$5\r\nhello\r\n", want: bulk("hello")},
	{name: "bulk empty", in: "$0\r\n\r\n", want: bulk("")},
	{name: "bulk with CRLF inside", in: "$8\r\na\r\nb\r\n\r\n\r\n", want: bulk("a\r\nb\r\n\r\n")},
	{name: "bulk binary", in: "$4\r\n\x00\xff\r\x80\r\n", want: bulk("\x00\xff\r\x80")},
	{name: "bulk RESP2 null", in: "$-1\r\n", want: null()},
	{name: "bulk over arena size", in: "$600\r\n" + strings.Repeat("b", 600) + "\r\n", want: bulk(strings.Repeat("b", 600))},

	// Arrays.
	{name: "array", in: "*2\r\n$3\r\nfoo\r\n:1\r\n", want: agg(resp.Array, bulk("foo"), integer(1))},
	{name: "array empty", in: "*0\r\n", want: agg(resp.Array)},
	{name: "array RESP2 null", in: "*-1\r\n", want: null()},
	{
		name: "array nested",
		in:   "*3\r\n*2\r\n+a\r\n*0\r\n$-1\r\n*1\r\n*-1\r\n",
		want: agg(resp.Array, agg(resp.Array, simple("a"), agg(resp.Array)), null(), agg(resp.Array, null())),
	},
	{
		name: "array of RESP3 types",
		in:   "*4\r\n_\r\n#t\r\n,1.5\r\n%1\r\n+k\r\n+v\r\n",
		want: agg(resp.Array, null(), resp.Value{Type: resp.Boolean, Int: 1}, resp.Value{Type: resp.Double, Float: 1.5, Str: "1.5"}, agg(resp.Map, simple("k"), simple("v"))),
	},
	{
		name: "array nested to the default depth",
		in:   strings.Repeat("*1\r\n", resp.DefaultMaxDepth-1) + "*0\r\n",
		want: nested(resp.DefaultMaxDepth),
	},

	// Null.
	{name: "null", in: "_\r\n", want: null()},

	// Booleans.
	{name: "boolean true", in: "#t\r\n", want: resp.Value{Type: resp.Boolean, Int: 1}},
	{name: "boolean false", in: "#f\r\n", want: resp.Value{Type: resp.Boolean}},

	// Doubles.
	{name: "double", in: ",1.23\r\n", want: resp.Value{Type: resp.Double, Float: 1.23, Str: "1.23"}},
	{name: "double integral", in: ",10\r\n", want: resp.Value{Type: resp.Double, Float: 10, Str: "10"}},
	{name: "double negative exponent", in: ",-1.5e-3\r\n", want: resp.Value{Type: resp.Double, Float: -1.5e-3, Str: "-1.5e-3"}},
	{name: "double inf", in: ",inf\r\n", want: resp.Value{Type: resp.Double, Float: math.Inf(1), Str: "inf"}},
	{name: "double -inf", in: ",-inf\r\n", want: resp.Value{Type: resp.Double, Float: math.Inf(-1), Str: "-inf"}},
	{name: "double nan", in: ",nan\r\n", want: resp.Value{Type: resp.Double, Float: math.NaN(), Str: "nan"}},
	{name: "double out of range", in: ",1e400\r\n", want: resp.Value{Type: resp.Double, Float: math.Inf(1), Str: "1e400"}},

	// Big numbers.
	{name: "big number", in: "(3492890328409238509324850943850943825024385\r\n", want: resp.Value{Type: resp.BigNumber, Str: "3492890328409238509324850943850943825024385"}},
	{name: "big number negative", in: "(-3492890328409238509324850943850943825024385\r\n", want: resp.Value{Type: resp.BigNumber, Str: "-3492890328409238509324850943850943825024385"}},

	// Bulk errors.
	{name: "bulk error", in: "!21\r\nSYNTAX invalid syntax\r\n", want: resp.Value{Type: resp.BulkError, Str: "SYNTAX invalid syntax"}},
	{name: "bulk error with CRLF", in: "!9\r\nERR a\r\nbc\r\n", want: resp.Value{Type: resp.BulkError, Str: "ERR a\r\nbc"}},

	// Verbatim strings: the format is split off.
	{name: "verbatim", in: "=15\r\ntxt:Some string\r\n", want: resp.Value{Type: resp.Verbatim, Format: "txt", Str: "Some string"}},
	{name: "verbatim empty text", in: "=4\r\nmkd:\r\n", want: resp.Value{Type: resp.Verbatim, Format: "mkd"}},
	{name: "verbatim colon in text", in: "=7\r\ntxt:a:b\r\n", want: resp.Value{Type: resp.Verbatim, Format: "txt", Str: "a:b"}},

	// Maps: key, value, key, value.
	{name: "map", in: "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", want: agg(resp.Map, simple("first"), integer(1), simple("second"), integer(2))},
	{name: "map empty", in: "%0\r\n", want: agg(resp.Map)},
	{name: "map nested", in: "%1\r\n*1\r\n:1\r\n%1\r\n+a\r\n_\r\n", want: agg(resp.Map, agg(resp.Array, integer(1)), agg(resp.Map, simple("a"), null()))},

	// Sets.
	{name: "set", in: "~3\r\n+a\r\n+b\r\n:3\r\n", want: agg(resp.Set, simple("a"), simple("b"), integer(3))},
	{name: "set empty", in: "~0\r\n", want: agg(resp.Set)},

	// Attributes attach to the value that follows.
	{
		name: "attribute",
		in:   "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n",
		want: withAttrs(agg(resp.Array, integer(2039123), integer(9543892)),
			simple("key-popularity"),
			agg(resp.Map,
				bulk("a"), resp.Value{Type: resp.Double, Float: 0.1923, Str: "0.1923"},
				bulk("b"), resp.Value{Type: resp.Double, Float: 0.0012, Str: "0.0012"})),
	},
	{name: "attribute on a simple string", in: "|1\r\n+ttl\r\n:3600\r\n+OK\r\n", want: withAttrs(simple("OK"), simple("ttl"), integer(3600))},
	{name: "attribute empty", in: "|0\r\n:1\r\n", want: withAttrs(integer(1), []resp.Value{}...)},
	{name: "attributes accumulate", in: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n", want: withAttrs(null(), simple("a"), integer(1), simple("b"), integer(2))},
	{
		name: "attribute on an element",
		in:   "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n",
		want: agg(resp.Array, withAttrs(integer(1), simple("k"), simple("v")), integer(2)),
	},
	{name: "attribute on a null bulk", in: "|1\r\n+k\r\n+v\r\n$-1\r\n", want: withAttrs(null(), simple("k"), simple("v"))},

	// Push frames.
	{
		name: "push",
		in:   ">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n",
		want: agg(resp.Push, bulk("message"), bulk("chan"), bulk("hello")),
	},
	{name: "push empty", in: ">0\r\n", want: agg(resp.Push)},

	// RESP2 connections read the RESP2 types as ever.
	{name: "RESP2 simple", in: "+OK\r\n", opts: resp2(), want: simple("OK")},
	{name: "RESP2 error", in: "-ERR x\r\n", opts: resp2(), want: resp.Value{Type: resp.ErrorReply, Str: "ERR x"}},
	{name: "RESP2 integer", in: ":-7\r\n", opts: resp2(), want: integer(-7)},
	{name: "RESP2 bulk", in: "$3\r\nabc\r\n", opts: resp2(), want: bulk("abc")},
	{name: "RESP2 null bulk", in: "$-1\r\n", opts: resp2(), want: null()},
	{name: "RESP2 null array", in: "*-1\r\n", opts: resp2(), want: null()},
	{name: "RESP2 array", in: "*2\r\n*1\r\n$-1\r\n+a\r\n", opts: resp2(), want: agg(resp.Array, agg(resp.Array, null()), simple("a"))},

	// Limits are inclusive.
	{name: "bulk at the limit", in: "$3\r\nabc\r\n", opts: opts(resp.WithMaxBulkLen(3)), want: bulk("abc")},
	{name: "line at the limit", in: "+abc\r\n", opts: opts(resp.WithMaxBulkLen(3)), want: simple("abc")},
	{name: "array at the limit", in: "*2\r\n:1\r\n:2\r\n", opts: opts(resp.WithMaxAggregateLen(2)), want: agg(resp.Array, integer(1), integer(2))},
	{name: "map at the limit", in: "%1\r\n:1\r\n:2\r\n", opts: opts(resp.WithMaxAggregateLen(2)), want: agg(resp.Map, integer(1), integer(2))},
	{name: "depth at the limit", in: "*1\r\n*0\r\n", opts: opts(resp.WithMaxDepth(2)), want: nested(2)},
	{name: "null array beyond the depth limit", in: "*1\r\n*-1\r\n", opts: opts(resp.WithMaxDepth(1)), want: agg(resp.Array, null())},
	{name: "memory at the limit", in: "*2\r\n+ab\r\n$3\r\ncde\r\n", opts: opts(resp.WithMaxReplyMemory(2*valueSize + 5)), want: agg(resp.Array, simple("ab"), bulk("cde"))},
	{name: "attributes at the memory limit", in: "|1\r\n+a\r\n:1\r\n:3\r\n", opts: opts(resp.WithMaxReplyMemory(2*valueSize + 1)), want: withAttrs(integer(3), simple("a"), integer(1))},
	{name: "number line longer than the buffer", in: ":-9223372036854775808\r\n", opts: opts(resp.WithBufferSize(16)), want: integer(math.MinInt64)},
}

func opts(o ...resp.ReaderOption) []resp.ReaderOption { return o }
func resp2() []resp.ReaderOption                      { return opts(resp.WithRESP2()) }

// nested returns depth arrays, each the only element of the one before,
// the innermost empty.
func nested(depth int) resp.Value {
	v := agg(resp.Array)
	for range depth - 1 {
		v = agg(resp.Array, v)
	}
	return v
}

// withoutNaN returns v with NaN doubles set to 0, so that require.Equal can
// compare values; the doubles' Str still tells "nan" apart.
func withoutNaN(v resp.Value) resp.Value {
	if math.IsNaN(v.Float) {
		v.Float = 0
	}
	if v.Elems != nil {
		v.Elems = mapValues(v.Elems, withoutNaN)
	}
	if v.Attrs != nil {
		v.Attrs = mapValues(v.Attrs, withoutNaN)
	}
	return v
}

func mapValues(vs []resp.Value, f func(resp.Value) resp.Value) []resp.Value {
	out := make([]resp.Value, len(vs))
	for i, v := range vs {
		out[i] = f(v)
	}
	return out
}

func TestReadGood(t *testing.T) {
	for _, tc := range goodFrames {
		t.Run(tc.name, func(t *testing.T) {
			// The frame alone, then followed by another one: the reader must
			// stop at the frame's end, and read the next one.
			r := resp.NewReader(strings.NewReader(tc.in+":42\r\n"), tc.opts...)
			got, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, withoutNaN(tc.want), withoutNaN(got))
			if math.IsNaN(tc.want.Float) {
				require.True(t, math.IsNaN(got.Float))
			}
			next, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, integer(42), next)
			_, err = r.Read()
			require.ErrorIs(t, err, io.EOF)

			// Byte by byte, the decoding is the same.
			r = resp.NewReader(iotest.OneByteReader(strings.NewReader(tc.in)), append(tc.opts, resp.WithBufferSize(16))...)
			got, err = r.Read()
			require.NoError(t, err)
			require.Equal(t, withoutNaN(tc.want), withoutNaN(got))
		})
	}
}

type badFrame struct {
	name    string
	in      string
	opts    []resp.ReaderOption
	wantErr error // resp.ErrProtocol, resp.ErrLimit, io.ErrUnexpectedEOF or io.EOF
}

// badFrames must fail with an error matching wantErr. The fuzz test seeds
// its corpus with them too.
var badFrames = []badFrame{
	{name: "no frame", in: "", wantErr: io.EOF},

	// Type bytes.
	{name: "garbage type byte", in: "?x\r\n", wantErr: resp.ErrProtocol},
	{name: "inline command", in: "PING\r\n", wantErr: resp.ErrProtocol},
	{name: "CRLF alone", in: "\r\n", wantErr: resp.ErrProtocol},
	{name: "NUL type byte", in: "\x00\r\n", wantErr: resp.ErrProtocol},
	{name: "garbage element", in: "*1\r\n?\r\n", wantErr: resp.ErrProtocol},

	// Frames cut short.
	{name: "truncated type byte only", in: "+", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated simple", in: "+OK", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated before LF", in: "+OK\r", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated integer", in: ":12", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated bulk length", in: "$5", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated bulk payload", in: "$5\r\nhel", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated bulk before CRLF", in: "$5\r\nhello", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated bulk before LF", in: "$5\r\nhello\r", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated large bulk", in: "$1000\r\n" + strings.Repeat("x", 999), wantErr: io.ErrUnexpectedEOF},
	{name: "truncated array", in: "*2\r\n:1\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated array header only", in: "*2\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated nested array", in: "*1\r\n*1\r\n*1\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated map value", in: "%1\r\n+k\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated verbatim", in: "=15\r\ntxt:", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated after attribute", in: "|1\r\n+k\r\n+v\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated push", in: ">3\r\n$7\r\nmessage\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "truncated null", in: "_\r", wantErr: io.ErrUnexpectedEOF},

	// Integers.
	{name: "integer empty", in: ":\r\n", wantErr: resp.ErrProtocol},
	{name: "integer plus sign", in: ":+5\r\n", wantErr: resp.ErrProtocol},
	{name: "integer minus only", in: ":-\r\n", wantErr: resp.ErrProtocol},
	{name: "integer overflow", in: ":9223372036854775808\r\n", wantErr: resp.ErrProtocol},
	{name: "integer underflow", in: ":-9223372036854775809\r\n", wantErr: resp.ErrProtocol},
	{name: "integer far overflow", in: ":99999999999999999999999\r\n", wantErr: resp.ErrProtocol},
	{name: "integer fraction", in: ":1.5\r\n", wantErr: resp.ErrProtocol},
	{name: "integer space", in: ": 1\r\n", wantErr: resp.ErrProtocol},
	{name: "integer letters", in: ":abc\r\n", wantErr: resp.ErrProtocol},
	{name: "integer hex", in: ":0x10\r\n", wantErr: resp.ErrProtocol},
	{name: "integer line too long", in: ":" + strings.Repeat("0", 65) + "\r\n", wantErr: resp.ErrProtocol},
	{name: "integer line longer than the buffer", in: ":" + strings.Repeat("1", 100000) + "\r\n", wantErr: resp.ErrProtocol},

	// Bulk strings.
	{name: "bulk negative length", in: "$-2\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk min length", in: "$-9223372036854775808\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk empty length", in: "$\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk bad length", in: "$abc\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk plus length", in: "$+3\r\nabc\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk length overflow", in: "$9223372036854775808\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk not followed by CRLF", in: "$3\r\nabcd\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk followed by LF CR", in: "$3\r\nabc\n\r", wantErr: resp.ErrProtocol},
	{name: "bulk followed by LF LF", in: "$2\r\nab\n\n", wantErr: resp.ErrProtocol},
	{name: "large bulk not followed by CRLF", in: "$1000\r\n" + strings.Repeat("x", 1002), wantErr: resp.ErrProtocol},

	// Aggregates.
	{name: "array negative length", in: "*-2\r\n", wantErr: resp.ErrProtocol},
	{name: "array bad length", in: "*x\r\n", wantErr: resp.ErrProtocol},
	{name: "map null", in: "%-1\r\n", wantErr: resp.ErrProtocol},
	{name: "set null", in: "~-1\r\n", wantErr: resp.ErrProtocol},
	{name: "push null", in: ">-1\r\n", wantErr: resp.ErrProtocol},
	{name: "attribute null", in: "|-1\r\n+OK\r\n", wantErr: resp.ErrProtocol},

	// Line endings.
	{name: "bare LF", in: "+OK\n", wantErr: resp.ErrProtocol},
	{name: "bare LF integer", in: ":1\n", wantErr: resp.ErrProtocol},
	{name: "bare LF bulk length", in: "$1\nx\r\n", wantErr: resp.ErrProtocol},
	{name: "bare LF in an array", in: "*1\r\n+a\n", wantErr: resp.ErrProtocol},
	{name: "LF alone", in: "+\n", wantErr: resp.ErrProtocol},
	{name: "CR inside a line", in: "+O\rK\r\n", wantErr: resp.ErrProtocol},
	{name: "CR CR LF", in: "+OK\r\r\n", wantErr: resp.ErrProtocol},
	{name: "CR inside an error", in: "-ERR\ra\r\n", wantErr: resp.ErrProtocol},
	{name: "CR inside a length", in: "$1\r\r\nx\r\n", wantErr: resp.ErrProtocol},

	// RESP3 scalars.
	{name: "null with payload", in: "_x\r\n", wantErr: resp.ErrProtocol},
	{name: "boolean empty", in: "#\r\n", wantErr: resp.ErrProtocol},
	{name: "boolean bad", in: "#x\r\n", wantErr: resp.ErrProtocol},
	{name: "boolean long", in: "#tt\r\n", wantErr: resp.ErrProtocol},
	{name: "boolean upper", in: "#T\r\n", wantErr: resp.ErrProtocol},
	{name: "double empty", in: ",\r\n", wantErr: resp.ErrProtocol},
	{name: "double bad", in: ",abc\r\n", wantErr: resp.ErrProtocol},
	{name: "double two points", in: ",1.5.5\r\n", wantErr: resp.ErrProtocol},
	{name: "big number empty", in: "(\r\n", wantErr: resp.ErrProtocol},
	{name: "big number sign only", in: "(-\r\n", wantErr: resp.ErrProtocol},
	{name: "big number letters", in: "(12a\r\n", wantErr: resp.ErrProtocol},
	{name: "verbatim without format", in: "=3\r\nabc\r\n", wantErr: resp.ErrProtocol},
	{name: "verbatim without colon", in: "=5\r\ntxtxy\r\n", wantErr: resp.ErrProtocol},
	{name: "verbatim null", in: "=-1\r\n", wantErr: resp.ErrProtocol},
	{name: "bulk error null", in: "!-1\r\n", wantErr: resp.ErrProtocol},

	// RESP3 types on a RESP2 connection.
	{name: "RESP2 push", in: ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 null", in: "_\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 boolean", in: "#t\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 double", in: ",1.5\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 big number", in: "(1\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 bulk error", in: "!1\r\nx\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 verbatim", in: "=5\r\ntxt:x\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 map", in: "%0\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 set", in: "~0\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 attribute", in: "|0\r\n+OK\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 push in an array", in: "*1\r\n>0\r\n", opts: resp2(), wantErr: resp.ErrProtocol},
	{name: "RESP2 null in an array", in: "*2\r\n:1\r\n_\r\n", opts: resp2(), wantErr: resp.ErrProtocol},

	// A frame over a limit is read past (see overLimitFrames), so one that
	// is cut short, or whose framing is broken, fails as any other does.
	{name: "bulk over the limit, cut short", in: "$1000000000\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "bulk over the limit swallowing the next frame", in: "$99999999999\r\n+OK\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "array over the limit, cut short", in: "*2000000\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "array of the largest length", in: "*9223372036854775807\r\n:1\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "map of the largest length", in: "%9223372036854775807\r\n:1\r\n", wantErr: io.ErrUnexpectedEOF},
	{name: "nesting over the limit, cut short", in: strings.Repeat("*1\r\n", 100000), wantErr: io.ErrUnexpectedEOF},
	{name: "attribute nesting over the limit, cut short", in: strings.Repeat("|1\r\n", 100000), wantErr: io.ErrUnexpectedEOF},
	{name: "line over the limit, cut short", in: "+abcdef", opts: opts(resp.WithMaxBulkLen(3), resp.WithBufferSize(16)), wantErr: io.ErrUnexpectedEOF},
	{name: "bulk over the limit not followed by CRLF", in: "$4\r\nabcdXY", opts: opts(resp.WithMaxBulkLen(3)), wantErr: resp.ErrProtocol},
	{name: "line over the limit ending in a bare LF", in: "+" + strings.Repeat("a", 100) + "\n", opts: opts(resp.WithMaxBulkLen(20), resp.WithBufferSize(16)), wantErr: resp.ErrProtocol},
	{name: "garbage inside an array over the limit", in: "*3\r\n:1\r\n?\r\n:3\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantErr: resp.ErrProtocol},
	{name: "bad length inside an array over the limit", in: "*3\r\n$x\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantErr: resp.ErrProtocol},
	{name: "RESP3 frame inside a RESP2 array over the limit", in: "*3\r\n:1\r\n_\r\n:3\r\n", opts: opts(resp.WithRESP2(), resp.WithMaxAggregateLen(2)), wantErr: resp.ErrProtocol},
	{name: "bad null inside a map over the limit", in: "%2\r\n%-1\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantErr: resp.ErrProtocol},
}

// limitFrame is a whole frame over a limit: Read must fail with a
// *resp.LimitError for a frame of type wantType, after reading past it.
type limitFrame struct {
	name     string
	in       string
	opts     []resp.ReaderOption
	wantType resp.Type
}

// valueSize is what resp.WithMaxReplyMemory charges per element.
const valueSize = int(unsafe.Sizeof(resp.Value{}))

// overLimitFrames are whole frames over a limit. The fuzz test seeds its
// corpus with them too.
var overLimitFrames = []limitFrame{
	// Bulk length.
	{name: "bulk", in: "$4\r\nabcd\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.Bulk},
	{name: "bulk error", in: "!4\r\nabcd\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.BulkError},
	{name: "verbatim", in: "=8\r\ntxt:abcd\r\n", opts: opts(resp.WithMaxBulkLen(7)), wantType: resp.Verbatim},
	{name: "bulk with CRLF inside", in: "$6\r\na\r\nb\r\n\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.Bulk},
	{name: "bulk longer than the buffer", in: "$1000\r\n" + strings.Repeat("x", 1000) + "\r\n", opts: opts(resp.WithMaxBulkLen(999), resp.WithBufferSize(16)), wantType: resp.Bulk},
	{name: "bulk in an array", in: "*3\r\n:1\r\n$4\r\nabcd\r\n$3\r\nabc\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.Array},
	{name: "bulk deep in a map", in: "%2\r\n+k\r\n*2\r\n~1\r\n$4\r\nabcd\r\n:1\r\n+k2\r\n*0\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.Map},

	// Lines of text.
	{name: "simple string", in: "+abcd\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.SimpleString},
	{name: "error", in: "-ERR abcd\r\n", opts: opts(resp.WithMaxBulkLen(3)), wantType: resp.ErrorReply},
	{name: "big number", in: "(12345\r\n", opts: opts(resp.WithMaxBulkLen(4)), wantType: resp.BigNumber},
	{name: "double", in: ",1.2345\r\n", opts: opts(resp.WithMaxBulkLen(4)), wantType: resp.Double},
	{name: "line longer than the buffer", in: "+" + strings.Repeat("a", 1000) + "\r\n", opts: opts(resp.WithBufferSize(16), resp.WithMaxBulkLen(100)), wantType: resp.SimpleString},
	{name: "line in a push", in: ">2\r\n+message\r\n+" + strings.Repeat("a", 100) + "\r\n", opts: opts(resp.WithBufferSize(16), resp.WithMaxBulkLen(20)), wantType: resp.Push},

	// Aggregate length.
	{name: "array", in: "*3\r\n:1\r\n:2\r\n:3\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantType: resp.Array},
	{name: "map", in: "%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.Map},
	{name: "set", in: "~3\r\n:1\r\n:2\r\n:3\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantType: resp.Set},
	{name: "push", in: ">3\r\n+message\r\n+c\r\n+p\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantType: resp.Push},
	{
		name:     "array holding every kind of frame",
		in:       "*9\r\n*2\r\n$1\r\na\r\n$-1\r\n%1\r\n+k\r\n+v\r\n_\r\n#t\r\n,1.5\r\n(12\r\n!3\r\nERR\r\n=5\r\ntxt:x\r\n|1\r\n+a\r\n*-1\r\n-ERR\r\n",
		opts:     opts(resp.WithMaxAggregateLen(8)),
		wantType: resp.Array,
	},
	{name: "array in an array", in: "*2\r\n:0\r\n*3\r\n:1\r\n:2\r\n:3\r\n", opts: opts(resp.WithMaxAggregateLen(2)), wantType: resp.Array},
	{name: "RESP2 array", in: "*3\r\n*1\r\n$-1\r\n*-1\r\n+a\r\n", opts: opts(resp.WithRESP2(), resp.WithMaxAggregateLen(2)), wantType: resp.Array},

	// Attributes: what the frame is comes from the value after them.
	{name: "attribute", in: "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n+OK\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.SimpleString},
	{name: "attributes together", in: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n+OK\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.SimpleString},
	{name: "attribute before a push", in: "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n>2\r\n+message\r\n+x\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.Push},
	{name: "attribute before more attributes", in: "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n|1\r\n+c\r\n:3\r\n*1\r\n:1\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.Array},
	{name: "attribute on an element", in: "*2\r\n|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n:1\r\n:2\r\n", opts: opts(resp.WithMaxAggregateLen(3)), wantType: resp.Array},

	// Nesting depth.
	{name: "deeper than the default", in: strings.Repeat("*1\r\n", resp.DefaultMaxDepth) + "*0\r\n", wantType: resp.Array},
	{name: "deeper than the limit", in: "*1\r\n*1\r\n*0\r\n", opts: opts(resp.WithMaxDepth(2)), wantType: resp.Array},
	{name: "map deeper than the limit", in: "%1\r\n+k\r\n~1\r\n>0\r\n", opts: opts(resp.WithMaxDepth(2)), wantType: resp.Map},
	{name: "attribute deeper than the limit", in: "|1\r\n+k\r\n|1\r\n+a\r\n+b\r\n+v\r\n+OK\r\n", opts: opts(resp.WithMaxDepth(1)), wantType: resp.SimpleString},
	{name: "aggregate at depth 0", in: "*0\r\n", opts: opts(resp.WithMaxDepth(0)), wantType: resp.Array},
	{name: "deep nesting", in: strings.Repeat("*1\r\n", 100000) + ":1\r\n", wantType: resp.Array},
	{name: "deep nesting of maps", in: strings.Repeat("%1\r\n+k\r\n", 100000) + ":1\r\n", wantType: resp.Map},
	{name: "deep attribute nesting", in: deepAttributes(100000), wantType: resp.Integer},

	// Reply memory.
	{name: "elements over the memory", in: "*1\r\n*3\r\n:1\r\n:2\r\n:3\r\n", opts: opts(resp.WithMaxReplyMemory(4*valueSize - 1)), wantType: resp.Array},
	{name: "bulks over the memory", in: "*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n", opts: opts(resp.WithMaxReplyMemory(2*valueSize + 5)), wantType: resp.Array},
	{name: "lines over the memory", in: "*2\r\n+abc\r\n-def\r\n", opts: opts(resp.WithMaxReplyMemory(2*valueSize + 5)), wantType: resp.Array},
	{name: "bulk over the memory", in: "$600\r\n" + strings.Repeat("b", 600) + "\r\n", opts: opts(resp.WithMaxReplyMemory(599)), wantType: resp.Bulk},
	{name: "attributes over the memory", in: "|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n:3\r\n", opts: opts(resp.WithMaxReplyMemory(4*valueSize + 1)), wantType: resp.Integer},
}

// deepAttributes returns an integer frame whose attribute's key carries an
// attribute, whose key carries one, and so on, depth times.
func deepAttributes(depth int) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("|1\r\n", depth))
	b.WriteString(":0\r\n")
	b.WriteString(strings.Repeat(":1\r\n:2\r\n", depth))
	return b.String()
}

func TestReadBad(t *testing.T) {
	for _, tc := range badFrames {
		t.Run(tc.name, func(t *testing.T) {
			r := resp.NewReader(strings.NewReader(tc.in), tc.opts...)
			v, err := r.Read()
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, resp.Value{}, v)
			for _, other := range []error{resp.ErrProtocol, resp.ErrLimit, io.ErrUnexpectedEOF, io.EOF} {
				if other != tc.wantErr {
					require.NotErrorIs(t, err, other)
				}
			}

			// Sticky: the same error again, and nothing more is read.
			buffered := r.Buffered()
			for range 3 {
				_, again := r.Read()
				require.Same(t, err, again)
			}
			require.Equal(t, buffered, r.Buffered())
		})
	}
}

// TestReadOverLimit reads each frame over a limit three times in a row,
// then another frame: a frame over a limit fails alone, and the reader
// stays in step.
func TestReadOverLimit(t *testing.T) {
	for _, tc := range overLimitFrames {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Repeat(tc.in, 3) + ":42\r\n"
			for _, src := range []struct {
				name string
				r    io.Reader
				opts []resp.ReaderOption
			}{
				{"whole", strings.NewReader(in), tc.opts},
				{"one byte at a time", iotest.OneByteReader(strings.NewReader(in)), append(tc.opts, resp.WithBufferSize(16))},
			} {
				r := resp.NewReader(src.r, src.opts...)
				for range 3 {
					v, err := r.Read()
					require.ErrorIs(t, err, resp.ErrLimit, src.name)
					require.NotErrorIs(t, err, resp.ErrProtocol)
					require.NotErrorIs(t, err, io.ErrUnexpectedEOF)
					var lim *resp.LimitError
					require.ErrorAs(t, err, &lim)
					require.Equal(t, tc.wantType, v.Type, src.name)
					require.Equal(t, resp.Value{Type: tc.wantType}, v)
				}
				v, err := r.Read()
				require.NoError(t, err, src.name)
				require.Equal(t, integer(42), v)
				_, err = r.Read()
				require.Equal(t, io.EOF, err)
			}
		})
	}
}

// TestReadLineOverLimitAtEveryOffset reads lines over the limit whose CR
// falls at every place relative to the read buffer's edge, where reading
// past the rest of the line must carry it from one chunk to the next.
func TestReadLineOverLimitAtEveryOffset(t *testing.T) {
	for n := 11; n < 80; n++ {
		in := "+" + strings.Repeat("a", n) + "\r\n:1\r\n"
		r := resp.NewReader(strings.NewReader(in), resp.WithBufferSize(16), resp.WithMaxBulkLen(10))
		_, err := r.Read()
		require.ErrorIs(t, err, resp.ErrLimit, "line of %d", n)
		v, err := r.Read()
		require.NoError(t, err, "line of %d", n)
		require.Equal(t, integer(1), v)
	}
}

func TestReadStream(t *testing.T) {
	in := "+OK\r\n:1\r\n$3\r\nabc\r\n*2\r\n_\r\n#f\r\n>2\r\n+message\r\n+x\r\n-ERR no\r\n"
	want := []resp.Value{
		simple("OK"),
		integer(1),
		bulk("abc"),
		agg(resp.Array, null(), resp.Value{Type: resp.Boolean}),
		agg(resp.Push, simple("message"), simple("x")),
		{Type: resp.ErrorReply, Str: "ERR no"},
	}
	for _, rd := range []struct {
		name string
		r    io.Reader
	}{
		{"whole", strings.NewReader(in)},
		{"one byte at a time", iotest.OneByteReader(strings.NewReader(in))},
		{"half reads", iotest.HalfReader(strings.NewReader(in))},
		{"EOF with the last data", iotest.DataErrReader(strings.NewReader(in))},
	} {
		t.Run(rd.name, func(t *testing.T) {
			r := resp.NewReader(rd.r)
			var got []resp.Value
			for {
				v, err := r.Read()
				if errors.Is(err, io.EOF) {
					// Clean EOF between frames is io.EOF itself, and sticky.
					require.Equal(t, io.EOF, err)
					_, err = r.Read()
					require.Equal(t, io.EOF, err)
					break
				}
				require.NoError(t, err)
				got = append(got, v)
			}
			require.Equal(t, want, got)
		})
	}
}

// errAfter returns its data, then err.
type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReadErrorsAreSticky(t *testing.T) {
	errBroken := errors.New("connection broken")
	for _, tc := range []struct {
		name    string
		r       io.Reader
		good    int // frames read before the error
		wantErr error
	}{
		{name: "protocol error after good frames", r: strings.NewReader("+OK\r\n:1\r\n?\r\n+OK\r\n"), good: 2, wantErr: resp.ErrProtocol},
		{name: "frame over a limit cut short", r: strings.NewReader("+OK\r\n$99999999999\r\n+OK\r\n"), good: 1, wantErr: io.ErrUnexpectedEOF},
		{name: "read error past a frame over a limit", r: &errAfter{data: []byte("*3\r\n:1\r\n"), err: errBroken}, wantErr: errBroken},
		{name: "unexpected EOF", r: strings.NewReader("+OK\r\n*2\r\n:1\r\n"), good: 1, wantErr: io.ErrUnexpectedEOF},
		{name: "clean EOF", r: strings.NewReader("+OK\r\n"), good: 1, wantErr: io.EOF},
		{name: "read error between frames", r: &errAfter{data: []byte("+OK\r\n"), err: errBroken}, good: 1, wantErr: errBroken},
		{name: "read error inside a frame", r: &errAfter{data: []byte("*2\r\n+OK\r\n"), err: errBroken}, wantErr: errBroken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resp.NewReader(tc.r, resp.WithMaxAggregateLen(2))
			for range tc.good {
				_, err := r.Read()
				require.NoError(t, err)
			}
			_, err := r.Read()
			require.ErrorIs(t, err, tc.wantErr)
			for range 3 {
				_, again := r.Read()
				require.Same(t, err, again)
			}
		})
	}
}

// TestReadLargeBulk reads bulks around the sizes where the reader changes
// strategy (arena, one buffer, a growing buffer), each followed by another
// frame that must not be swallowed.
func TestReadLargeBulk(t *testing.T) {
	for _, n := range []int{511, 512, 513, 64<<10 - 3, 64<<10 - 2, 64<<10 - 1, 64 << 10, 100000, 1<<20 + 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			payload := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			payload[n/2] = '\r' // CRLF inside does not end a bulk
			if n > 1 {
				payload[n/2+1] = '\n'
			}
			in := "$" + strconv.Itoa(n) + "\r\n" + string(payload) + "\r\n+next\r\n"
			for _, src := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
				r := resp.NewReader(src)
				v, err := r.Read()
				require.NoError(t, err)
				require.Equal(t, resp.Bulk, v.Type)
				require.Equal(t, string(payload), v.Str)
				v, err = r.Read()
				require.NoError(t, err)
				require.Equal(t, simple("next"), v)
				_, err = r.Read()
				require.Equal(t, io.EOF, err)
			}
		})
	}
}

// TestReadLongLine reads lines longer than the read buffer, which are
// collected beyond it, and checks them against WithMaxBulkLen.
func TestReadLongLine(t *testing.T) {
	const limit = 300
	for _, tc := range []struct {
		name    string
		n       int
		wantErr error
	}{
		{name: "within the buffer", n: 10},
		{name: "twice the buffer", n: 33},
		{name: "at the limit", n: limit},
		{name: "one over the limit", n: limit + 1, wantErr: resp.ErrLimit},
		{name: "far over the limit", n: 100 * limit, wantErr: resp.ErrLimit},
	} {
		for _, typ := range []string{"+", "-", "(", ","} {
			t.Run(tc.name+" "+typ, func(t *testing.T) {
				text := strings.Repeat("7", tc.n)
				r := resp.NewReader(strings.NewReader(typ+text+"\r\n:1\r\n"), resp.WithBufferSize(16), resp.WithMaxBulkLen(limit))
				v, err := r.Read()
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
					return
				}
				require.NoError(t, err)
				require.Equal(t, text, v.Str)
				v, err = r.Read()
				require.NoError(t, err)
				require.Equal(t, integer(1), v)
			})
		}
	}

	t.Run("default buffer", func(t *testing.T) {
		text := strings.Repeat("x", 3*resp.DefaultBufferSize+5)
		r := resp.NewReader(strings.NewReader("+" + text + "\r\n+" + text[:100] + "\r\n"))
		v, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, simple(text), v)
		v, err = r.Read()
		require.NoError(t, err)
		require.Equal(t, simple(text[:100]), v)
	})
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadAllocatesAsBytesArrive shows that a declared length buys no
// memory: over a limit, nothing is allocated for the frame, even while it is
// read past; within a limit, memory grows only with the bytes that actually
// arrive.
func TestReadAllocatesAsBytesArrive(t *testing.T) {
	const small = 4 << 10 // an error value and change
	for _, tc := range []struct {
		name     string
		in       string
		opts     []resp.ReaderOption
		wantErr  error
		maxBytes uint64
	}{
		{name: "bulk over the limit, then EOF", in: "$1000000000\r\n", wantErr: io.ErrUnexpectedEOF, maxBytes: small},
		{name: "bulk over the limit with its bytes", in: "$100000\r\n" + strings.Repeat("x", 100000) + "\r\n", opts: opts(resp.WithMaxBulkLen(99999)), wantErr: resp.ErrLimit, maxBytes: small},
		{name: "bulk over the memory with its bytes", in: "$100000\r\n" + strings.Repeat("x", 100000) + "\r\n", opts: opts(resp.WithMaxReplyMemory(99999)), wantErr: resp.ErrLimit, maxBytes: small},
		{name: "array over the limit, then EOF", in: "*1000000000\r\n", wantErr: io.ErrUnexpectedEOF, maxBytes: small},
		{name: "array over the limit with its elements", in: "*1000\r\n" + strings.Repeat(":1\r\n", 1000), opts: opts(resp.WithMaxAggregateLen(999)), wantErr: resp.ErrLimit, maxBytes: small},
		{name: "map over the limit, then EOF", in: "%600000\r\n", wantErr: io.ErrUnexpectedEOF, maxBytes: small},
		{name: "nesting over the limit", in: strings.Repeat("*1\r\n", 17) + ":1\r\n", wantErr: resp.ErrLimit, maxBytes: small},
		{name: "line over the limit", in: "+" + strings.Repeat("x", 100000) + "\r\n", opts: opts(resp.WithMaxBulkLen(1000)), wantErr: resp.ErrLimit, maxBytes: small},
		{name: "number line too long", in: ":" + strings.Repeat("1", 100000) + "\r\n", wantErr: resp.ErrProtocol, maxBytes: small},
		{name: "huge bulk within the limits, then EOF", in: "$1000000000\r\nabc", opts: opts(resp.WithMaxBulkLen(1<<30), resp.WithMaxReplyMemory(1<<30)), wantErr: io.ErrUnexpectedEOF, maxBytes: 1 << 20},
		{name: "huge array within the limits, then EOF", in: "*1048576\r\n:1\r\n", wantErr: io.ErrUnexpectedEOF, maxBytes: 1 << 20},
		{name: "huge nested arrays within the limits, then EOF", in: strings.Repeat("*1048576\r\n", 16), opts: opts(resp.WithMaxReplyMemory(math.MaxInt)), wantErr: io.ErrUnexpectedEOF, maxBytes: 4 << 20},
		{name: "huge nested arrays over the memory, then EOF", in: strings.Repeat("*1048576\r\n", 16), wantErr: io.ErrUnexpectedEOF, maxBytes: 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The count takes in whatever the rest of the process (the
			// runtime, the race detector) allocates meanwhile, so the
			// least of a few runs is the reader's own.
			least := uint64(math.MaxUint64)
			for range 5 {
				// The reader and its buffer are made before the count starts.
				r := resp.NewReader(strings.NewReader(tc.in), append(tc.opts, resp.WithBufferSize(64<<10))...)
				var err error
				n := allocated(func() { _, err = r.Read() })
				require.ErrorIs(t, err, tc.wantErr)
				least = min(least, n)
			}
			require.Less(t, least, tc.maxBytes, "bytes allocated")
		})
	}
}

// TestValuesStayIntact reads many replies, many of them built over the
// reader's arena or its long-line buffer, keeps them all, and checks them
// only at the end: later reads must not have written over earlier values.
func TestValuesStayIntact(t *testing.T) {
	var in strings.Builder
	var want []resp.Value
	text := func(i, n int) string {
		b := make([]byte, n)
		for j := range b {
			b[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i+j)%36]
		}
		return string(b)
	}
	for i := range 5000 {
		switch i % 9 {
		case 0:
			s := text(i, i%40)
			in.WriteString("+" + s + "\r\n")
			want = append(want, simple(s))
		case 1:
			s := text(i, i%700) // both sides of the arena's size limit
			in.WriteString("$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n")
			want = append(want, bulk(s))
		case 2:
			s := "ERR " + text(i, i%30)
			in.WriteString("-" + s + "\r\n")
			want = append(want, resp.Value{Type: resp.ErrorReply, Str: s})
		case 3:
			in.WriteString(":" + strconv.Itoa(i) + "\r\n")
			want = append(want, integer(int64(i)))
		case 4:
			a, b := text(i, 7), text(i+1, i%100)
			in.WriteString("*3\r\n$7\r\nmessage\r\n$7\r\n" + a + "\r\n$" + strconv.Itoa(len(b)) + "\r\n" + b + "\r\n")
			want = append(want, agg(resp.Array, bulk("message"), bulk(a), bulk(b)))
		case 5:
			s := text(i, 3+i%20)
			in.WriteString("=" + strconv.Itoa(len(s)+4) + "\r\ntxt:" + s + "\r\n")
			want = append(want, resp.Value{Type: resp.Verbatim, Format: "txt", Str: s})
		case 6:
			s := text(i, 100+i%500) // longer than the read buffer
			in.WriteString("+" + s + "\r\n")
			want = append(want, simple(s))
		case 7:
			s := strconv.Itoa(i) + ".5"
			in.WriteString("," + s + "\r\n")
			f, _ := strconv.ParseFloat(s, 64)
			want = append(want, resp.Value{Type: resp.Double, Str: s, Float: f})
		case 8:
			k, v := text(i, 5), text(i, i%70)
			in.WriteString("|1\r\n+" + k + "\r\n+" + v + "\r\n%1\r\n+" + k + "\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n")
			want = append(want, withAttrs(agg(resp.Map, simple(k), bulk(v)), simple(k), simple(v)))
		}
	}
	r := resp.NewReader(strings.NewReader(in.String()), resp.WithBufferSize(64))
	got := make([]resp.Value, 0, len(want))
	for {
		v, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, v)
	}
	runtime.GC()
	require.Equal(t, want, got)
}

func TestBuffered(t *testing.T) {
	r := resp.NewReader(strings.NewReader("+OK\r\n:1\r\n"))
	_, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, len(":1\r\n"), r.Buffered())
	_, err = r.Read()
	require.NoError(t, err)
	require.Zero(t, r.Buffered())
}

// TestReadAllocs pins what the benchmarks report: integers and short
// simple strings cost no allocation of their own (simple strings share an
// arena chunk, one per thousands of replies).
func TestReadAllocs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame string
	}{
		{"simple string", "+OK\r\n"},
		{"integer", ":12345\r\n"},
		{"null", "_\r\n"},
		{"boolean", "#t\r\n"},
		{"short bulk", "$5\r\nhello\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resp.NewReader(&cycle{data: []byte(tc.frame)})
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := r.Read(); err != nil {
					panic(err)
				}
			})
			require.Zero(t, allocs)
		})
	}
}
