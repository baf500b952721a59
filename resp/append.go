package resp

import "strconv"

// AppendCommand appends one command, encoded as a RESP array of bulk
// strings, to dst and returns the extended slice. It allocates nothing when
// dst has room.
func AppendCommand[S ~string | ~[]byte](dst []byte, args ...S) []byte {
	dst = appendArrayLen(dst, len(args))
	for _, a := range args {
		dst = appendBulk(dst, a)
	}
	return dst
}

// appendArrayLen appends an array header of n elements.
func appendArrayLen(dst []byte, n int) []byte {
	dst = append(dst, byte(Array))
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// appendBulk appends s as a bulk string.
func appendBulk[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, byte(Bulk))
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}
