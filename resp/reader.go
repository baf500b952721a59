package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unsafe"

	"github.com/batonlock/baton/internal/respframe"
)

// Reader decodes replies from a buffered stream.
//
// Errors are sticky, as in bufio: after a protocol error or a failed read,
// every later Read returns the same error, because the stream can no longer
// be trusted to be in step. A frame over a limit is the exception: the
// Reader reads past it and returns an error matching [ErrLimit], and the
// next Read goes on with the next frame.
type Reader struct {
	br              *bufio.Reader
	maxBulkLen      int
	maxAggregateLen int
	maxDepth        int
	maxReplyMemory  int
	bufferSize      int // of the bufio.Reader NewReader makes, if it makes one
	resp2           bool

	err   error
	used  int      // memory charged to the reply being read; see charge
	left  leftover // what a frame over a limit still holds; see skipRest
	arena []byte   // see intern
	long  []byte   // reused for lines longer than the read buffer
}

// valueSize is what one element of an aggregate costs in memory, whatever
// it holds, besides its strings.
const valueSize = int(unsafe.Sizeof(Value{}))

// NewReader returns a Reader of RESP frames from rd.
//
// If rd is a *bufio.Reader, the Reader reads through its buffer and keeps
// none of its own: the bytes it holds are those not yet decoded, so its
// owner may look at them between Reads (Buffered, Peek) without losing
// any, and its size is that of the longest line read without copying.
// Any other rd is wrapped in a 16 KiB bufio.Reader.
func NewReader(rd io.Reader, opts ...ReaderOption) *Reader {
	r := &Reader{
		maxBulkLen:      DefaultMaxBulkLen,
		maxAggregateLen: defaultMaxAggregateLen,
		maxDepth:        defaultMaxDepth,
		maxReplyMemory:  defaultMaxReplyMemory,
		bufferSize:      defaultBufferSize,
	}
	for _, o := range opts {
		o(r)
	}
	if br, ok := rd.(*bufio.Reader); ok {
		r.br = br
	} else {
		r.br = bufio.NewReaderSize(rd, r.bufferSize)
	}
	return r
}

// Read decodes the next frame. At a clean end of stream, between frames, it
// returns io.EOF; a stream that ends inside a frame gives
// io.ErrUnexpectedEOF. An error reply from the server is a Value of type
// [ErrorReply] or [BulkError], not an error of Read.
//
// A frame over one of the Reader's limits fails with an error matching
// [ErrLimit], returned only once the frame has been read past, in bounded
// memory and keeping none of it, so the stream is still in step: the error
// is not sticky, and the next Read returns the next frame. The Value
// returned with it has only its Type set: that of the frame dropped, after
// any attributes (a push frame over a limit is a [Push], not a reply). If
// the stream fails while the frame is being read past (it ends, or its
// bytes are not valid RESP), Read returns that failure instead, and it is
// sticky.
func (r *Reader) Read() (Value, error) {
	if r.err != nil {
		return Value{}, r.err
	}
	t, err := r.br.ReadByte()
	if err != nil {
		r.err = err
		return Value{}, err
	}
	r.used = 0
	v, err := r.readFrame(Type(t), 0)
	if err == nil {
		return v, nil
	}
	lim, over := err.(*limitError)
	if over {
		if err = r.skipRest(lim); err == nil {
			return Value{Type: lim.typ}, lim
		}
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if over {
		err = fmt.Errorf("%w (while reading past a frame over a limit: %s)", err, lim.msg)
	}
	r.err = err
	return Value{}, err
}

func (r *Reader) readValue(depth int) (Value, error) {
	t, err := r.br.ReadByte()
	if err != nil {
		return Value{}, err
	}
	return r.readFrame(Type(t), depth)
}

// readFrame decodes the frame whose type byte t was just read. depth is the
// number of aggregates that enclose it.
func (r *Reader) readFrame(t Type, depth int) (Value, error) {
	var attrs []Value
	for t == attribute && !r.resp2 {
		// Attributes are read in a loop, not by recursion, so a stream of
		// them cannot grow the stack; their pairs share one element budget.
		var err error
		if attrs, err = r.readElems(t, attrs, depth); err != nil {
			if _, ok := err.(*limitError); ok {
				// The value the attributes belong to is still to come.
				if depth == 0 {
					r.left.top = true
				} else {
					r.left.elems = respframe.AddCounts(r.left.elems, 1)
				}
			}
			return Value{}, err
		}
		b, err := r.br.ReadByte()
		if err != nil {
			return Value{}, err
		}
		t = Type(b)
	}
	v, err := r.readPlain(t, depth)
	if lim, ok := err.(*limitError); ok && depth == 0 {
		lim.typ = t
	}
	v.Attrs = attrs
	return v, err
}

func (r *Reader) readPlain(t Type, depth int) (Value, error) {
	if r.resp2 && !isRESP2(t) {
		if _, known := typeNames[t]; known {
			return Value{}, protocolError("RESP3 %s frame on a RESP2 connection", t)
		}
	}
	v := Value{Type: t}
	switch t {
	case SimpleString, ErrorReply:
		line, err := r.readText()
		if err != nil {
			return v, err
		}
		v.Str = r.intern(line)
	case Integer:
		line, err := r.readNumberLine()
		if err != nil {
			return v, err
		}
		n, ok := respframe.ParseInt(line)
		if !ok {
			return v, protocolError("bad integer %q", line)
		}
		v.Int = n
	case Bulk, BulkError, Verbatim:
		n, err := r.readLength(t)
		if err != nil || n < 0 {
			return Value{Type: Null}, err
		}
		if n > r.maxBulkLen {
			r.left.partial, r.left.bulk = partialBulk, n
			return v, overLimit("%s length %d, limit %d", t, n, r.maxBulkLen)
		}
		if !r.charge(n) {
			r.left.partial, r.left.bulk = partialBulk, n
			return v, r.overMemory()
		}
		if v.Str, err = r.readBulk(n); err != nil {
			return v, err
		}
		if t == Verbatim {
			if len(v.Str) < 4 || v.Str[3] != ':' {
				return v, protocolError("verbatim string without a format prefix")
			}
			v.Format, v.Str = v.Str[:3], v.Str[4:]
		}
	case Array, Set, Push, Map:
		n, err := r.readLength(t)
		if err != nil || n < 0 {
			return Value{Type: Null}, err
		}
		if v.Elems, err = r.readElemsOf(t, elemCount(t, n), nil, depth); err != nil {
			return v, err
		}
	case Null:
		line, err := r.readNumberLine()
		if err != nil {
			return v, err
		}
		if len(line) != 0 {
			return v, protocolError("null frame with payload %q", line)
		}
	case Boolean:
		line, err := r.readNumberLine()
		if err != nil {
			return v, err
		}
		switch string(line) {
		case "t":
			v.Int = 1
		case "f":
		default:
			return v, protocolError("bad boolean %q", line)
		}
	case Double:
		line, err := r.readText()
		if err != nil {
			return v, err
		}
		f, perr := strconv.ParseFloat(string(line), 64)
		if perr != nil && !errors.Is(perr, strconv.ErrRange) {
			return v, protocolError("bad double %q", line)
		}
		v.Float, v.Str = f, r.intern(line)
	case BigNumber:
		line, err := r.readText()
		if err != nil {
			return v, err
		}
		if !isBigNumber(line) {
			return v, protocolError("bad big number %q", line)
		}
		v.Str = r.intern(line)
	default:
		return v, protocolError("unknown frame type byte %q", byte(t))
	}
	return v, nil
}

func isRESP2(t Type) bool {
	switch t {
	case SimpleString, ErrorReply, Integer, Bulk, Array:
		return true
	}
	return false
}

// readElems reads the count line of an aggregate of type t and then its
// elements, appending them to elems.
func (r *Reader) readElems(t Type, elems []Value, depth int) ([]Value, error) {
	n, err := r.readLength(t)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, protocolError("null %s", t)
	}
	return r.readElemsOf(t, elemCount(t, n), elems, depth)
}

// elemCount is how many elements follow the header of an aggregate of type
// t and length n: a map or attribute has n pairs.
func elemCount(t Type, n int) int {
	if t == Map || t == attribute {
		return respframe.AddCounts(n, n)
	}
	return n
}

// readElemsOf reads count elements of an aggregate of type t, appending
// them to elems, after checking the aggregate against the limits. Over a
// limit, its elements are left to skipRest.
func (r *Reader) readElemsOf(t Type, count int, elems []Value, depth int) ([]Value, error) {
	switch {
	case depth+1 > r.maxDepth:
		r.left.elems = respframe.AddCounts(r.left.elems, count)
		return nil, overLimit("%s nested %d deep, limit %d", t, depth+1, r.maxDepth)
	case count > r.maxAggregateLen-len(elems):
		r.left.elems = respframe.AddCounts(r.left.elems, count)
		return nil, overLimit("%s of %d elements, limit %d", t, respframe.AddCounts(len(elems), count), r.maxAggregateLen)
	case count > (r.maxReplyMemory-r.used)/valueSize:
		r.left.elems = respframe.AddCounts(r.left.elems, count)
		return nil, r.overMemory()
	}
	r.used += count * valueSize
	if count == 0 {
		if elems == nil {
			elems = []Value{}
		}
		return elems, nil
	}
	want := len(elems) + count
	if elems == nil {
		// Reserve no more than a modest amount before the elements arrive:
		// a hostile count must not buy a large allocation on its own.
		elems = make([]Value, 0, min(count, 1024))
	}
	for i := range count {
		e, err := r.readValue(depth + 1)
		if err != nil {
			if _, ok := err.(*limitError); ok {
				r.left.elems = respframe.AddCounts(r.left.elems, count-i-1)
			}
			return nil, err
		}
		if len(elems) == cap(elems) {
			// Grow by doubling, as append would, but never past the
			// declared count: the memory charged is what is kept.
			grown := make([]Value, len(elems), min(want, max(2*cap(elems), 8)))
			copy(grown, elems)
			elems = grown
		}
		elems = append(elems, e)
	}
	return elems, nil
}

// readLength reads a count line. Only RESP2's bulk and array may be -1,
// their null; the result is then -1.
func (r *Reader) readLength(t Type) (int, error) {
	line, err := r.readNumberLine()
	if err != nil {
		return 0, err
	}
	n, ok := respframe.ParseInt(line)
	switch {
	case !ok:
		return 0, protocolError("bad %s length %q", t, line)
	case isNullLength(t, n):
		return -1, nil
	case n < 0:
		return 0, protocolError("negative %s length %d", t, n)
	case n > math.MaxInt:
		return math.MaxInt, nil // over every limit just the same
	}
	return int(n), nil
}

// isNullLength reports whether a length of n makes a frame of type t a
// null: -1, for a bulk string or an array (RESP2's nulls). Any other
// negative length is refused.
func isNullLength(t Type, n int64) bool { return n == -1 && (t == Bulk || t == Array) }

// charge counts n bytes against the reply's memory budget, and reports
// false, charging nothing, if they do not fit.
func (r *Reader) charge(n int) bool {
	if n > r.maxReplyMemory-r.used {
		return false
	}
	r.used += n
	return true
}

func (r *Reader) overMemory() *limitError {
	return overLimit("reply would take over %d bytes of memory", r.maxReplyMemory)
}

func overLimit(format string, args ...any) *limitError {
	return &limitError{msg: fmt.Sprintf(format, args...)}
}

// readText reads the line of a simple string, error, double or big number,
// whose text counts against the bulk length limit and the reply's memory.
func (r *Reader) readText() ([]byte, error) {
	line, err := r.readLine(r.maxBulkLen, ErrLimit)
	if err == nil && !r.charge(len(line)) {
		return nil, r.overMemory()
	}
	return line, err
}

// readNumberLine reads a line that carries a number or a flag. One longer
// than respframe.MaxNumberLine cannot be valid: it is a protocol error.
func (r *Reader) readNumberLine() ([]byte, error) {
	return r.readLine(respframe.MaxNumberLine, ErrProtocol)
}

// readLine returns the next CRLF-terminated line without its CRLF. A line
// whose text is longer than limit fails, as soon as that is known, with a
// *limitError if tooLong is ErrLimit (the rest of the line is then left to
// skipRest), else with a protocol error. The slice is valid until the next
// read.
func (r *Reader) readLine(limit int, tooLong error) ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = r.long[:0]
		for errors.Is(err, bufio.ErrBufferFull) {
			// With no LF yet, the line's text is at least every byte read
			// so far but the last, which may be its CR. That is checked
			// before the bytes are copied, so an over-long line costs
			// nothing.
			if len(r.long)+len(line)-1 > limit {
				if cap(r.long) > 4*r.br.Size() {
					r.long = nil
				}
				if tooLong == ErrLimit {
					r.left.partial, r.left.cr = partialLine, line[len(line)-1] == '\r'
				}
				return nil, lineTooLong(tooLong, limit)
			}
			r.long = append(r.long, line...)
			line, err = r.br.ReadSlice('\n')
		}
		r.long = append(r.long, line...)
		line = r.long
		if cap(r.long) > 4*r.br.Size() {
			r.long = nil // do not keep a rare huge line's buffer
		}
	}
	if err != nil {
		return nil, err
	}
	n := len(line)
	if n < 2 || line[n-2] != '\r' {
		return nil, protocolError("line ends in a bare LF")
	}
	line = line[:n-2]
	if len(line) > limit {
		return nil, lineTooLong(tooLong, limit)
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, protocolError("CR inside a line")
	}
	return line, nil
}

func lineTooLong(kind error, limit int) error {
	if kind == ErrLimit {
		return overLimit("line longer than %d bytes", limit)
	}
	return fmt.Errorf("%w: line longer than %d bytes", kind, limit)
}

// readBulk reads an n-byte payload and its CRLF.
func (r *Reader) readBulk(n int) (string, error) {
	if n <= maxInterned {
		buf := r.arenaRoom(n + 2)
		if _, err := io.ReadFull(r.br, buf); err != nil {
			return "", err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return "", protocolError("bulk payload not followed by CRLF")
		}
		return r.commit(buf[:n]), nil
	}
	// A large payload grows as its bytes arrive, so a length the server
	// never honours costs little memory.
	buf := make([]byte, 0, min(n+2, 64<<10))
	for len(buf) < n+2 {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), n+2-len(buf)))
		}
		// Grow may round the capacity up past the frame: read no further
		// than its CRLF, or the next frame's bytes would be swallowed.
		m, err := io.ReadFull(r.br, buf[len(buf):min(cap(buf), n+2)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return "", err
		}
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return "", protocolError("bulk payload not followed by CRLF")
	}
	return unsafe.String(unsafe.SliceData(buf), n), nil
}

func isBigNumber(b []byte) bool {
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func protocolError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}
