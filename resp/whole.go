package resp

import (
	"bufio"
	"bytes"
	"errors"
	"math"
)

// A caller that reads replies for itself, but must be free to give up at
// any moment, cannot stop in the middle of a frame: what it decoded so far
// would be lost, and the stream out of step. So it reads from the stream
// only between frames, with Fill, which decodes nothing, until Whole says
// that the next frame is in the buffer; Read then decodes it without
// touching the stream.

// ErrBufferFull is returned by Fill when the buffer is full, and the frame
// in it still not whole: only Read can go on with that frame.
var ErrBufferFull = errors.New("resp: buffer full")

// Fill reads from the stream once, adding what it gets to the buffer, and
// decodes nothing. Its error, unlike Read's, is not kept: after a read that
// timed out, Fill or Read may be called again. With the buffer full it
// reads nothing and returns ErrBufferFull.
func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	n := r.br.Buffered()
	if n == r.br.Size() {
		return ErrBufferFull
	}
	_, err := r.br.Peek(n + 1)
	if errors.Is(err, bufio.ErrBufferFull) {
		return ErrBufferFull
	}
	return err
}

// Whole reports whether Read will return, with the next frame or with an
// error, without reading from the stream: the next frame is all in the
// buffer, or its bytes there are already invalid. It never reports true for
// a frame that Read would have to wait for.
func (r *Reader) Whole() bool {
	if r.err != nil {
		return true
	}
	b, _ := r.br.Peek(r.br.Buffered()) // no read: all of it is buffered
	return wholeFrame(b, r.resp2)
}

// NextType reports the type of the next frame, from its first byte, if
// that byte is in the buffer; it reads nothing from the stream and decodes
// nothing.
func (r *Reader) NextType() (Type, bool) {
	if r.err != nil || r.br.Buffered() == 0 {
		return 0, false
	}
	b, _ := r.br.Peek(1) // buffered: no read
	return Type(b[0]), true
}

// wholeFrame reports whether b begins with a whole frame, or with bytes
// that Read refuses before it needs more (see Whole). It walks the frame
// without recursion, counting the values still to come, so its cost is
// bounded by len(b) whatever the frame declares.
func wholeFrame(b []byte, resp2 bool) bool {
	for due := 1; due > 0; {
		if len(b) == 0 {
			return false
		}
		t := Type(b[0])
		if resp2 && !isRESP2(t) {
			return true // Read refuses it on its type byte
		}
		end := bytes.IndexByte(b[1:], '\n')
		if end < 0 {
			return false
		}
		line := b[1 : 1+end]
		b = b[2+end:]
		switch t {
		case Integer, Null, Boolean:
			if len(line) > maxNumberLine+1 {
				return true // a number line Read refuses for its length
			}
			fallthrough
		case SimpleString, ErrorReply, Double, BigNumber:
			due--
			continue
		case Bulk, BulkError, Verbatim, Array, Set, Push, Map, Attribute:
		default:
			return true // Read refuses it on its type byte
		}
		if len(line) == 0 || line[len(line)-1] != '\r' || len(line) > maxNumberLine+1 {
			return true // a length line Read refuses
		}
		n, ok := parseInt(line[:len(line)-1])
		switch {
		case !ok || n > math.MaxInt:
			return true // Read refuses it, or no buffer could hold it
		case isNullLength(t, n):
			due-- // a null
			continue
		case n < 0:
			return true // a negative length Read refuses
		}
		switch t {
		case Bulk, BulkError, Verbatim:
			if n > int64(len(b))-2 {
				return false
			}
			b = b[n+2:]
			due--
		case Map, Attribute:
			// An attribute's pairs come before the value it belongs to,
			// which is still due.
			due = addCounts(due, elemCount(t, int(n)))
			if t == Map {
				due--
			}
		default:
			due = addCounts(due, int(n)) - 1
		}
	}
	return true
}
