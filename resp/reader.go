package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unsafe"
)

// Reader decodes replies from a buffered stream.
//
// Errors are sticky, as in bufio: after a protocol error, a limit error or a
// failed read, every later Read returns the same error, because the stream
// can no longer be trusted to be in step.
type Reader struct {
	br              *bufio.Reader
	maxBulkLen      int
	maxAggregateLen int
	maxDepth        int
	bufferSize      int
	resp2           bool

	err   error
	arena []byte // see intern
	long  []byte // reused for lines longer than the read buffer
}

// NewReader returns a Reader of RESP frames from rd.
func NewReader(rd io.Reader, opts ...ReaderOption) *Reader {
	r := &Reader{
		maxBulkLen:      DefaultMaxBulkLen,
		maxAggregateLen: DefaultMaxAggregateLen,
		maxDepth:        DefaultMaxDepth,
		bufferSize:      DefaultBufferSize,
	}
	for _, o := range opts {
		o(r)
	}
	r.br = bufio.NewReaderSize(rd, r.bufferSize)
	return r
}

// Buffered returns the number of bytes read from the stream but not yet
// decoded.
func (r *Reader) Buffered() int { return r.br.Buffered() }

// Read decodes the next frame. At a clean end of stream, between frames, it
// returns io.EOF; a stream that ends inside a frame gives
// io.ErrUnexpectedEOF. An error reply from the server is a Value of type
// ErrorReply or BulkError, not an error of Read.
func (r *Reader) Read() (Value, error) {
	if r.err != nil {
		return Value{}, r.err
	}
	t, err := r.br.ReadByte()
	if err != nil {
		r.err = err
		return Value{}, err
	}
	v, err := r.readFrame(Type(t), 0)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		r.err = err
		return Value{}, err
	}
	return v, nil
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
	for t == Attribute && !r.resp2 {
		// Attributes are read in a loop, not by recursion, so a stream of
		// them cannot grow the stack; their pairs share one element budget.
		var err error
		if attrs, err = r.readElems(t, attrs, depth); err != nil {
			return Value{}, err
		}
		b, err := r.br.ReadByte()
		if err != nil {
			return Value{}, err
		}
		t = Type(b)
	}
	v, err := r.readPlain(t, depth)
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
		n, ok := parseInt(line)
		if !ok {
			return v, protocolError("bad integer %q", line)
		}
		v.Int = n
	case Bulk, BulkError, Verbatim:
		n, err := r.readLength(t, r.maxBulkLen)
		if err != nil || n < 0 {
			return Value{Type: Null}, err
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
		n, err := r.readCount(t)
		if err != nil || n < 0 {
			return Value{Type: Null}, err
		}
		if v.Elems, err = r.readElemsOf(t, n, nil, depth); err != nil {
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
	n, err := r.readCount(t)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, protocolError("null %s", t)
	}
	return r.readElemsOf(t, n, elems, depth)
}

// readCount reads an aggregate's count line, checked against the element
// budget. It returns -1 for RESP2's null array.
func (r *Reader) readCount(t Type) (int, error) {
	limit := r.maxAggregateLen
	if t == Map || t == Attribute {
		limit /= 2 // pairs
	}
	return r.readLength(t, limit)
}

func (r *Reader) readElemsOf(t Type, n int, elems []Value, depth int) ([]Value, error) {
	if depth+1 > r.maxDepth {
		return nil, fmt.Errorf("%w: %s nested %d deep, limit %d", ErrLimit, t, depth+1, r.maxDepth)
	}
	count := n
	if t == Map || t == Attribute {
		count = 2 * n
	}
	if len(elems)+count > r.maxAggregateLen {
		return nil, fmt.Errorf("%w: %s of %d elements, limit %d", ErrLimit, t, len(elems)+count, r.maxAggregateLen)
	}
	if count == 0 {
		if elems == nil {
			elems = []Value{}
		}
		return elems, nil
	}
	if elems == nil {
		// Reserve no more than a modest amount before the elements arrive:
		// a hostile count must not buy a large allocation on its own.
		elems = make([]Value, 0, min(count, 1024))
	}
	for range count {
		e, err := r.readValue(depth + 1)
		if err != nil {
			return nil, err
		}
		elems = append(elems, e)
	}
	return elems, nil
}

// readLength reads a count line and checks it against limit. Only RESP2's
// bulk and array may be -1, their null; the result is then -1.
func (r *Reader) readLength(t Type, limit int) (int, error) {
	line, err := r.readNumberLine()
	if err != nil {
		return 0, err
	}
	n, ok := parseInt(line)
	switch {
	case !ok:
		return 0, protocolError("bad %s length %q", t, line)
	case n == -1 && (t == Bulk || t == Array):
		return -1, nil
	case n < 0:
		return 0, protocolError("negative %s length %d", t, n)
	case n > int64(limit):
		return 0, fmt.Errorf("%w: %s length %d, limit %d", ErrLimit, t, n, limit)
	}
	return int(n), nil
}

// maxNumberLine caps the lines that carry a number or a flag (integer,
// length, boolean, null). The longest valid one, "-9223372036854775808",
// has 20 bytes; the margin admits leading zeros.
const maxNumberLine = 64

// readText reads the line of a simple string, error, double or big number,
// whose text counts against the bulk length limit.
func (r *Reader) readText() ([]byte, error) {
	return r.readLine(r.maxBulkLen, ErrLimit)
}

// readNumberLine reads a line that carries a number or a flag. One longer
// than maxNumberLine cannot be valid: it is a protocol error.
func (r *Reader) readNumberLine() ([]byte, error) {
	return r.readLine(maxNumberLine, ErrProtocol)
}

// readLine returns the next CRLF-terminated line without its CRLF. A line
// whose text is longer than limit fails with an error matching tooLong, as
// soon as that is known. The slice is valid until the next read.
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
				return nil, lineTooLong(tooLong, limit)
			}
			r.long = append(r.long, line...)
			line, err = r.br.ReadSlice('\n')
		}
		r.long = append(r.long, line...)
		line = r.long
		if cap(r.long) > 4*r.bufferSize {
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

func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	maxMagnitude := uint64(1<<63 - 1)
	if neg {
		maxMagnitude = 1 << 63
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (maxMagnitude-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true
	}
	return int64(n), true
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
