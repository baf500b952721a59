package resp_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	tidwall "github.com/tidwall/resp"

	"github.com/batonlock/baton/resp"
)

// FuzzReader checks the Reader against github.com/tidwall/resp, a RESP2
// reader written independently, on the first frame of any input; checks
// that the Reader in RESP3 mode never panics and returns bounded values; and
// checks that a Reader with tight limits, which reads past the frames over
// them, stays in step with one that decodes every frame.
//
// The two readers legitimately differ in these ways, each found in tidwall's
// resp.go (v0.1.1) and each taken into account below:
//
//  1. tidwall reads a top-level line whose first byte is not + - : $ * as an
//     inline ("telnet") command. Its verdict is used only when the first byte
//     is one of those five.
//  2. tidwall's readLine reads on to the first CRLF, so a bare LF or a CR
//     inside a simple string or error becomes part of its text. RESP forbids
//     both and ours rejects them, so a value holding one of them is not
//     required of ours.
//  3. tidwall parses integers and lengths with strconv.ParseInt, which takes a
//     leading '+' (":+5", "$+3") and any number of leading zeros. Ours refuses
//     the '+' (the spec has none), and number lines longer than 64 bytes.
//  4. tidwall reads every negative bulk or array length as null ("$-5");
//     ours accepts only -1, the one the spec defines.
//  5. tidwall answers an array length over 1024*1024 with a null value and no
//     error, without reading the elements; ours reads past the elements and
//     fails with ErrLimit.
//  6. ours limits nesting depth; here the limit exceeds what the input could
//     nest.
//
// Differences 2 to 5 only concern input that is not canonical (tidwall's
// value, marshalled again, is not the bytes it read) or that holds CR/LF in
// a line, which is why ours must accept what tidwall accepts only for
// canonical input without CR or LF in a simple string or error.
//
// One more difference is in the harness, not in the verdicts: tidwall
// allocates a declared bulk or array length before reading it, so the input
// is first passed through tame, which lowers the lengths that the rest of
// the input cannot possibly supply. Both readers are then given the same
// tamed bytes, so no check is skipped; only which inputs are compared
// changes, and only for inputs tidwall would spend up to gigabytes on.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkRESP3(t, in)
		checkSkipsInStep(t, in)
		compareWithTidwall(t, tame(in))
	})
}

func fuzzSeeds() []string {
	var seeds []string
	for _, g := range goodFrames {
		seeds = append(seeds, g.in)
	}
	for _, b := range badFrames {
		seeds = append(seeds, b.in)
	}
	for _, l := range overLimitFrames {
		seeds = append(seeds, l.in)
	}
	seeds = append(seeds,
		// Where the two readers differ; see FuzzReader.
		"PING\r\n", "SET k \"v w\"\r\n", "+a\nb\r\n", "-ERR a\rb\r\n", ":+5\r\n", "$+3\r\nabc\r\n",
		"$-5\r\n", "*-5\r\n", "*1048577\r\n", "*1\r\n*1048577\r\n", ":"+strings.Repeat("0", 70)+"5\r\n",
		// Edges both accept.
		":-0\r\n", ":007\r\n", "$-0\r\n\r\n", "$03\r\nabc\r\n", "*-0\r\n", "*01\r\n+a\r\n",
		// Streams of frames.
		"+OK\r\n+OK\r\n", "*2\r\n$3\r\nfoo\r\n$-1\r\n:1\r\n", "*3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$5\r\nhello\r\n",
		"*2\r\n*2\r\n:1\r\n-ERR x\r\n*0\r\n", "$1000\r\n"+strings.Repeat("x", 1000)+"\r\n",
		"|1\r\n+a\r\n+b\r\n>2\r\n+x\r\n|0\r\n_\r\n",
	)
	short := seeds[:0]
	for _, s := range seeds {
		if len(s) <= 4<<10 {
			short = append(short, s)
		}
	}
	return short
}

// checkRESP3 reads every frame of in with a default Reader. It must not
// panic; each value must be well formed and no bigger than the bytes it was
// read from; each error must be one of the four kinds; a limit error must
// be a *resp.LimitError that read past at least a type byte, after which
// reading goes on; every other error must be sticky.
func checkRESP3(t *testing.T, in []byte) {
	src := bytes.NewReader(in)
	r := resp.NewReader(src)
	pos := 0
	for {
		v, err := r.Read()
		if errors.Is(err, resp.ErrLimit) {
			var lim *resp.LimitError
			require.ErrorAs(t, err, &lim)
			end := len(in) - src.Len() - r.Buffered()
			require.Greater(t, end, pos, "a limit error that read nothing")
			pos = end
			continue
		}
		if err != nil {
			require.True(t,
				errors.Is(err, resp.ErrProtocol) || errors.Is(err, resp.ErrLimit) ||
					errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF),
				"unexpected kind of error %v", err)
			if errors.Is(err, io.EOF) {
				require.Equal(t, len(in), pos, "io.EOF inside a frame")
			}
			_, again := r.Read()
			require.Same(t, err, again, "error not sticky")
			return
		}
		end := len(in) - src.Len() - r.Buffered()
		require.NoError(t, wellFormed(v))
		require.LessOrEqual(t, cost(v), end-pos, "value %v from %q", v, in[pos:end])
		pos = end
	}
}

// checkSkipsInStep reads in with a Reader whose limits the input cannot
// reach and with one whose limits are tight, frame by frame. While the
// first decodes frames, the second must decode each to the same value or
// fail with a limit error for it, and both must end the frame at the same
// byte: reading past a frame follows the same framing as decoding it.
func checkSkipsInStep(t *testing.T, in []byte) {
	looseSrc, tightSrc := bytes.NewReader(in), bytes.NewReader(in)
	loose := resp.NewReader(looseSrc, resp.WithMaxDepth(len(in)+1), resp.WithMaxReplyMemory(math.MaxInt))
	tight := resp.NewReader(tightSrc, resp.WithBufferSize(16),
		resp.WithMaxBulkLen(4), resp.WithMaxAggregateLen(3), resp.WithMaxDepth(2), resp.WithMaxReplyMemory(5*valueSize))
	for {
		lv, lerr := loose.Read()
		tv, terr := tight.Read()
		if lerr != nil {
			if errors.Is(lerr, io.EOF) {
				require.Equal(t, io.EOF, terr, "the tight reader is not at the end of %q", in)
			}
			return
		}
		if terr == nil {
			require.Equal(t, withoutNaN(lv), withoutNaN(tv), "values read from %q", in)
		} else {
			require.ErrorIs(t, terr, resp.ErrLimit, "the tight reader failed on %v from %q", lv, in)
		}
		require.Equal(t, len(in)-looseSrc.Len()-loose.Buffered(), len(in)-tightSrc.Len()-tight.Buffered(),
			"the readers ended %v at different bytes of %q", lv, in)
	}
}

// wellFormed checks the invariants of a decoded value.
func wellFormed(v resp.Value) error {
	switch v.Type {
	case resp.SimpleString, resp.ErrorReply, resp.Integer, resp.Bulk, resp.Null,
		resp.Boolean, resp.Double, resp.BigNumber, resp.BulkError:
		if v.Elems != nil || v.Format != "" {
			return fmt.Errorf("scalar %v with elements or format", v.Type)
		}
	case resp.Verbatim:
		if len(v.Format) != 3 {
			return fmt.Errorf("verbatim format %q", v.Format)
		}
	case resp.Array, resp.Set, resp.Push, resp.Map:
		if v.Elems == nil {
			return fmt.Errorf("%v without elements", v.Type)
		}
		if v.Type == resp.Map && len(v.Elems)%2 != 0 {
			return fmt.Errorf("map of %d elements", len(v.Elems))
		}
	default:
		return fmt.Errorf("value of type %v", v.Type)
	}
	if v.Type == resp.Boolean && v.Int != 0 && v.Int != 1 {
		return fmt.Errorf("boolean %d", v.Int)
	}
	if len(v.Attrs)%2 != 0 {
		return fmt.Errorf("%d attribute elements", len(v.Attrs))
	}
	for _, e := range append(v.Elems[:len(v.Elems):len(v.Elems)], v.Attrs...) {
		if err := wellFormed(e); err != nil {
			return err
		}
	}
	return nil
}

// cost is a lower bound on the bytes that encode v: every frame takes at
// least three (a type byte and CRLF), plus the text it carries.
func cost(v resp.Value) int {
	n := 3 + len(v.Str) + len(v.Format)
	for _, e := range v.Elems {
		n += cost(e)
	}
	for _, e := range v.Attrs {
		n += cost(e)
	}
	return n
}

// compareWithTidwall reads the first frame of b with ours in RESP2 mode, with
// limits as permissive as tidwall's, and with tidwall.
func compareWithTidwall(t *testing.T, b []byte) {
	src := bytes.NewReader(b)
	r := resp.NewReader(src, resp.WithRESP2(),
		resp.WithMaxBulkLen(512<<20),          // tidwall: 512 MiB
		resp.WithMaxAggregateLen(1024*1024),   // tidwall: 1024*1024 elements
		resp.WithMaxDepth(max(10000, len(b))), // tidwall: none
		resp.WithMaxReplyMemory(math.MaxInt),  // tidwall: none
		// A small buffer, its size drawn from the input, sends lines of
		// most lengths through the path for lines longer than the buffer;
		// checkRESP3 covers the default one.
		resp.WithBufferSize(16+len(b)%64),
	)
	ov, oerr := r.Read()
	oread := len(b) - src.Len() - r.Buffered()

	tv, tread, terr := tidwall.NewReader(bytes.NewReader(b)).ReadValue()

	if oerr == nil {
		require.NoError(t, terr, "ours accepted %q as %v", b, ov)
		require.Equal(t, canonTidwall(tv), canon(ov), "values read from %q", b)
		require.Equal(t, tread, oread, "bytes read from %q", b)
	}
	if terr == nil {
		marshalled, err := tv.MarshalRESP()
		canonical := err == nil && bytes.Equal(marshalled, b[:tread])
		if canonical && !lineHasCRLF(tv) {
			require.NoError(t, oerr, "tidwall accepted canonical %q", b[:tread])
		}
	}
	if terr != nil && len(b) > 0 && strings.IndexByte("+-:$*", b[0]) >= 0 {
		require.Error(t, oerr, "tidwall rejected %q (%v); ours read %v", b, terr, ov)
	}
}

// canon encodes one of our values as RESP2, nulls as "$-1". Anything that
// RESP2 cannot carry is spelled so that it never equals canonTidwall.
func canon(v resp.Value) string {
	if len(v.Attrs) > 0 {
		return fmt.Sprintf("<attributes %v>", v.Attrs)
	}
	switch v.Type {
	case resp.SimpleString:
		return "+" + v.Str + "\r\n"
	case resp.ErrorReply:
		return "-" + v.Str + "\r\n"
	case resp.Integer:
		return ":" + strconv.FormatInt(v.Int, 10) + "\r\n"
	case resp.Bulk:
		return "$" + strconv.Itoa(len(v.Str)) + "\r\n" + v.Str + "\r\n"
	case resp.Null:
		return "$-1\r\n"
	case resp.Array:
		s := "*" + strconv.Itoa(len(v.Elems)) + "\r\n"
		for _, e := range v.Elems {
			s += canon(e)
		}
		return s
	}
	return fmt.Sprintf("<ours: %v %v>", v.Type, v)
}

// canonTidwall encodes one of tidwall's values as canon does ours.
func canonTidwall(v tidwall.Value) string {
	switch v.Type() {
	case tidwall.SimpleString:
		return "+" + v.String() + "\r\n"
	case tidwall.Error:
		return "-" + v.String() + "\r\n"
	case tidwall.Integer:
		return ":" + strconv.Itoa(v.Integer()) + "\r\n"
	case tidwall.BulkString:
		if v.IsNull() {
			return "$-1\r\n"
		}
		return "$" + strconv.Itoa(len(v.Bytes())) + "\r\n" + string(v.Bytes()) + "\r\n"
	case tidwall.Array:
		if v.IsNull() {
			return "$-1\r\n"
		}
		s := "*" + strconv.Itoa(len(v.Array())) + "\r\n"
		for _, e := range v.Array() {
			s += canonTidwall(e)
		}
		return s
	}
	// Type 0: the null tidwall returns for an array over its limit.
	return fmt.Sprintf("<tidwall: type %d, null %v>", v.Type(), v.IsNull())
}

// lineHasCRLF reports whether a simple string or error in v holds a CR or
// an LF, which tidwall accepts and RESP forbids.
func lineHasCRLF(v tidwall.Value) bool {
	switch v.Type() {
	case tidwall.SimpleString, tidwall.Error:
		return strings.ContainsAny(v.String(), "\r\n")
	case tidwall.Array:
		for _, e := range v.Array() {
			if lineHasCRLF(e) {
				return true
			}
		}
	}
	return false
}

// tame returns b with every "$n\r\n" and "*n\r\n", wherever it appears,
// whose n (read as tidwall reads it, within tidwall's limits) asks for more
// than the rest of b holds, lowered to a count that still asks for more: a
// bulk of n bytes needs n+2 more bytes, an array of n elements at least 3n
// (no element is shorter than "+\r\n"). A frame that could not complete
// still cannot, but tidwall's up-front allocation (make([]byte, n+2),
// make([]Value, n)) stays proportional to the input. Only counts that get
// smaller are rewritten, so the input never grows. Such a count may sit in a
// payload rather than a header; rewriting it there is harmless, since both
// readers are given the same bytes.
func tame(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		lf := bytes.IndexByte(b[i+1:], '\n') + i + 1
		if (c != '$' && c != '*') || lf <= i+1 || b[lf-1] != '\r' {
			out = append(out, c)
			i++
			continue
		}
		n, err := strconv.ParseInt(string(b[i+1:lf-1]), 10, 64)
		if err != nil {
			out = append(out, c)
			i++
			continue
		}
		rest := int64(len(b) - lf - 1)
		lower := n
		switch {
		case c == '$' && n <= 512<<20:
			lower = rest + 1 // n+2 > rest still
		case c == '*' && n <= 1024*1024:
			lower = rest/3 + 1 // 3n > rest still
		}
		if lower < n {
			out = append(out, c)
			out = strconv.AppendInt(out, lower, 10)
			out = append(out, '\r', '\n')
		} else {
			out = append(out, b[i:lf+1]...)
		}
		i = lf + 1
	}
	return out
}

func TestTame(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"$1000000\r\nab", "$3\r\nab"},
		{"$+0001000000\r\n", "$1\r\n"},
		{"*1000\r\n:1\r\n", "*2\r\n:1\r\n"},
		{"*2\r\n$99\r\nab", "*2\r\n$3\r\nab"},
		{"$12\r\nab$999999\r\n\r\n", "$12\r\nab$3\r\n\r\n"},
		// Unchanged: satisfiable, null, beyond tidwall's limits, not a count.
		{"$3\r\nabc\r\n", "$3\r\nabc\r\n"},
		{"*1\r\n:1\r\n", "*1\r\n:1\r\n"},
		{"$-1\r\n", "$-1\r\n"},
		{"*-1\r\n", "*-1\r\n"},
		{"$600000000\r\n", "$600000000\r\n"},
		{"*2000000\r\n", "*2000000\r\n"},
		{"$x\r\n$", "$x\r\n$"},
		{"$5\n", "$5\n"},
	} {
		require.Equal(t, tc.want, string(tame([]byte(tc.in))), "tame(%q)", tc.in)
	}
}
