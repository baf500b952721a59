package resp

import "github.com/batonlock/baton/internal/respframe"

// Names the tests of package resp_test reach that are not resp's API.

// The default limits, which each option's doc states.
const (
	DefaultMaxAggregateLen = defaultMaxAggregateLen
	DefaultMaxDepth        = defaultMaxDepth
	DefaultMaxReplyMemory  = defaultMaxReplyMemory
	DefaultBufferSize      = defaultBufferSize
)

// Err is the generic error code, which no caller branches on.
const Err Prefix = "ERR"

// Attribute is the type byte of an attribute frame.
const Attribute = attribute

// LimitError is the error of a frame over a limit.
type LimitError = limitError

// WithBufferSize sets the size of the bufio.Reader NewReader wraps a
// reader in that is not one already: the tests use small ones to split
// frames and lines across reads.
func WithBufferSize(n int) ReaderOption {
	return func(r *Reader) { r.bufferSize = n }
}

func AppendArrayLen(dst []byte, n int) []byte { return appendArrayLen(dst, n) }

func AppendBulk[S ~string | ~[]byte](dst []byte, s S) []byte { return appendBulk(dst, s) }

// The reads between frames of package conn, on a Reader's own buffer, as
// conn makes them on the bufio.Reader it hands to NewReader; Whole and
// Fill also answer for a Reader whose error is sticky, as Read would.

var ErrBufferFull = respframe.ErrBufferFull

// Buffered returns the number of bytes read from the stream but not yet
// decoded.
func (r *Reader) Buffered() int { return r.br.Buffered() }

func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	return respframe.Fill(r.br)
}

func (r *Reader) Whole() bool {
	return r.err != nil || respframe.Whole(respframe.Buffered(r.br), r.resp2)
}

func (r *Reader) NextType() (Type, bool) {
	if r.err != nil {
		return 0, false
	}
	t, ok := respframe.NextType(r.br)
	return Type(t), ok
}
