package respframe

import (
	"bufio"
	"bytes"
	"errors"
	"math"
)

// The frame type bytes, as package resp's Type constants spell them.
const (
	simpleString = '+'
	errorReply   = '-'
	integer      = ':'
	bulk         = '$'
	array        = '*'
	null         = '_'
	boolean      = '#'
	double       = ','
	bigNumber    = '('
	bulkError    = '!'
	verbatim     = '='
	mapType      = '%'
	set          = '~'
	attribute    = '|'
	push         = '>'
)

// ErrBufferFull is returned by Fill when the buffer is full, and the frame
// in it still not whole: only a reader that may stop inside a frame can go
// on with that frame.
var ErrBufferFull = errors.New("resp: buffer full")

// Fill reads from br's stream once, adding what it gets to the buffer, and
// decodes nothing. Its error is bufio's, which is not kept: after a read
// that timed out, Fill (or the Reader's Read) may be called again. With the
// buffer full it reads nothing and returns ErrBufferFull.
func Fill(br *bufio.Reader) error {
	n := br.Buffered()
	if n == br.Size() {
		return ErrBufferFull
	}
	_, err := br.Peek(n + 1)
	if errors.Is(err, bufio.ErrBufferFull) {
		return ErrBufferFull
	}
	return err
}

// Buffered returns the bytes in br's buffer, reading nothing.
func Buffered(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered()) // no read: all of it is buffered
	return b
}

// NextType returns the type byte of the next frame, if it is in br's
// buffer; it reads nothing from the stream.
func NextType(br *bufio.Reader) (byte, bool) {
	if br.Buffered() == 0 {
		return 0, false
	}
	b, _ := br.Peek(1) // buffered: no read
	return b[0], true
}

// Whole reports whether b begins with a whole frame, or with bytes that
// resp's Reader refuses before it needs more: either way its Read returns
// without reading from the stream. It never reports true for a frame that
// Read would have to wait for. resp2 is the Reader's WithRESP2. It walks
// the frame without recursion, counting the values still to come, so its
// cost is bounded by len(b) whatever the frame declares.
func Whole(b []byte, resp2 bool) bool {
	for due := 1; due > 0; {
		if len(b) == 0 {
			return false
		}
		t := b[0]
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
		case integer, null, boolean:
			if len(line) > MaxNumberLine+1 {
				return true // a number line Read refuses for its length
			}
			fallthrough
		case simpleString, errorReply, double, bigNumber:
			due--
			continue
		case bulk, bulkError, verbatim, array, set, push, mapType, attribute:
		default:
			return true // Read refuses it on its type byte
		}
		if len(line) == 0 || line[len(line)-1] != '\r' || len(line) > MaxNumberLine+1 {
			return true // a length line Read refuses
		}
		n, ok := ParseInt(line[:len(line)-1])
		switch {
		case !ok || n > math.MaxInt:
			return true // Read refuses it, or no buffer could hold it
		case n == -1 && (t == bulk || t == array):
			due-- // RESP2's null bulk or null array
			continue
		case n < 0:
			return true // a negative length Read refuses
		}
		switch t {
		case bulk, bulkError, verbatim:
			if n > int64(len(b))-2 {
				return false
			}
			b = b[n+2:]
			due--
		case mapType, attribute:
			// n pairs; an attribute's come before the value it belongs
			// to, which is still due.
			due = AddCounts(due, AddCounts(int(n), int(n)))
			if t == mapType {
				due--
			}
		default:
			due = AddCounts(due, int(n)) - 1
		}
	}
	return true
}

// isRESP2 reports whether t is one of the five types of RESP2, the only
// ones a Reader built with WithRESP2 accepts.
func isRESP2(t byte) bool {
	switch t {
	case simpleString, errorReply, integer, bulk, array:
		return true
	}
	return false
}
