package resp

import "unsafe"

// Short strings are copied into an arena: a chunk of bytes that is only ever
// appended to, never rewritten, and given up when full. A string made over
// arena bytes is therefore immutable, and reading a simple string, a short
// bulk or an error costs no allocation of its own; one chunk serves hundreds
// of replies. The price: a string kept alive keeps its whole chunk alive,
// which is why only short strings go there.
const (
	arenaChunk  = 8 << 10
	maxInterned = 512
)

// intern returns b as a string that does not alias the read buffer.
func (r *Reader) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInterned {
		return string(b)
	}
	room := r.arenaRoom(len(b))
	copy(room, b)
	return r.commit(room)
}

// arenaRoom returns n writable bytes at the arena's end, which stay
// uncommitted (free to be overwritten) until commit takes some of them.
func (r *Reader) arenaRoom(n int) []byte {
	if cap(r.arena)-len(r.arena) < n {
		r.arena = make([]byte, 0, arenaChunk)
	}
	return r.arena[len(r.arena) : len(r.arena)+n]
}

// commit marks b, which must start at the arena's end, as used and returns
// it as a string.
func (r *Reader) commit(b []byte) string {
	r.arena = r.arena[:len(r.arena)+len(b)]
	return unsafe.String(unsafe.SliceData(b), len(b))
}
