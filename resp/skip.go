package resp

import (
	"bufio"
	"errors"
	"math"

	"github.com/batonlock/baton/internal/respframe"
)

// A frame over a limit is read past rather than decoded, so that the stream
// stays in step and only that frame is lost. As the error unwinds from where
// the limit was met, each level records in a leftover what it still owes:
// the rest of a bulk payload or of a line, and how many elements of the
// enclosing aggregates have not been read. skipRest then reads past all of
// it in bounded memory. It counts the elements still to come instead of
// recursing, so no nesting can grow the stack, and it checks only what
// framing needs: lengths, line ends, the CRLF after a payload, and the
// types the connection may carry. Invalid bytes there are a protocol error,
// sticky as any other.

// leftover is what remains of a frame over a limit.
type leftover struct {
	partial int  // partialBulk or partialLine: the element the limit was met in
	bulk    int  // partialBulk: payload bytes still to come, before the CRLF
	cr      bool // partialLine: the last byte read was a CR
	elems   int  // elements still to come after the partial one, at any depth
	top     bool // the frame's value, after its attributes, is still to come
}

const (
	partialNone = iota
	partialBulk
	partialLine
)

// skipRest reads past what r.left records, and sets lim.Type when the
// frame's type was not known yet.
func (r *Reader) skipRest(lim *limitError) error {
	left := r.left
	r.left = leftover{}
	switch left.partial {
	case partialBulk:
		if err := r.skipPayload(left.bulk); err != nil {
			return err
		}
	case partialLine:
		if err := r.skipLine(left.cr); err != nil {
			return err
		}
	}
	if err := r.skip(left.elems); err != nil {
		return err
	}
	if !left.top {
		return nil
	}
	// The limit was met in attributes of the top-level frame: what the
	// frame is, a reply or a push, is learnt from the value they belong to.
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			return err
		}
		t := Type(b)
		more, err := r.skipHeader(t)
		if err != nil {
			return err
		}
		if t != attribute {
			lim.typ = t
			return r.skip(more)
		}
		if err := r.skip(more - 1); err != nil { // the pairs; the value is next
			return err
		}
	}
}

// skip reads past n frames.
func (r *Reader) skip(n int) error {
	for ; n > 0; n-- {
		b, err := r.br.ReadByte()
		if err != nil {
			return err
		}
		more, err := r.skipHeader(Type(b))
		if err != nil {
			return err
		}
		n = respframe.AddCounts(n, more)
	}
	return nil
}

// skipHeader reads past the frame whose type byte t was just read, all but
// its elements, and returns how many frames follow that belong to it: an
// aggregate's elements, or an attribute's pairs and the value they belong
// to.
func (r *Reader) skipHeader(t Type) (int, error) {
	if r.resp2 && !isRESP2(t) {
		return 0, protocolError("%s frame on a RESP2 connection", t)
	}
	switch t {
	case SimpleString, ErrorReply, Double, BigNumber:
		return 0, r.skipLine(false)
	case Integer, Null, Boolean:
		_, err := r.readNumberLine()
		return 0, err
	case Bulk, BulkError, Verbatim:
		n, err := r.readLength(t)
		if err != nil || n < 0 {
			return 0, err
		}
		return 0, r.skipPayload(n)
	case Array, Set, Push, Map, attribute:
		n, err := r.readLength(t)
		if err != nil || n < 0 {
			return 0, err
		}
		if t == attribute {
			return respframe.AddCounts(elemCount(t, n), 1), nil
		}
		return elemCount(t, n), nil
	}
	return 0, protocolError("unknown frame type byte %q", byte(t))
}

// skipPayload reads past n payload bytes and the CRLF after them.
func (r *Reader) skipPayload(n int) error {
	for n > 0 {
		// Discard reads through the buffer, whatever n is.
		m, err := r.br.Discard(min(n, math.MaxInt32))
		n -= m
		if err != nil {
			return err
		}
	}
	for _, want := range []byte("\r\n") {
		b, err := r.br.ReadByte()
		if err != nil {
			return err
		}
		if b != want {
			return protocolError("bulk payload not followed by CRLF")
		}
	}
	return nil
}

// skipLine reads past the rest of a line of any length; cr says whether
// the byte before the rest was a CR.
func (r *Reader) skipLine(cr bool) error {
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			if len(chunk) >= 2 {
				cr = chunk[len(chunk)-2] == '\r'
			}
			if !cr {
				return protocolError("line ends in a bare LF")
			}
			return nil
		case len(chunk) > 0:
			cr = chunk[len(chunk)-1] == '\r'
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}
