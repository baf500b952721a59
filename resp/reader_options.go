package resp

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// Limits a Reader applies unless told otherwise.
const (
	DefaultMaxBulkLen      = 64 << 20
	DefaultMaxAggregateLen = 1 << 20
	DefaultMaxDepth        = 16
	DefaultMaxReplyMemory  = 128 << 20
	DefaultBufferSize      = 16 << 10
)

// WithMaxBulkLen caps the length of one bulk string, verbatim string, bulk
// error, or line of text (simple string, error, double, big number), in
// bytes. Default: DefaultMaxBulkLen (64 MiB); Redis itself accepts up to
// 512 MiB (proto-max-bulk-len), so raise it to read larger values, and
// WithMaxReplyMemory with it.
func WithMaxBulkLen(n int) ReaderOption {
	return func(r *Reader) { r.maxBulkLen = n }
}

// WithMaxAggregateLen caps the number of elements of one array, set or push
// frame; a map or attribute of n pairs counts as 2n, and the attributes
// before one value count together. Default: DefaultMaxAggregateLen
// (1,048,576).
func WithMaxAggregateLen(n int) ReaderOption {
	return func(r *Reader) { r.maxAggregateLen = n }
}

// WithMaxDepth caps how deeply aggregates may nest; a reply that is not an
// aggregate has depth 0, a flat array depth 1. Default: DefaultMaxDepth (16),
// far above what any Redis command replies with.
func WithMaxDepth(n int) ReaderOption {
	return func(r *Reader) { r.maxDepth = n }
}

// WithMaxReplyMemory caps the memory one reply may take once decoded, in
// bytes, counted as unsafe.Sizeof(Value) (104 bytes on 64-bit platforms)
// for every element of every aggregate and attribute in it, plus the bytes
// of every string. The count limits alone do not bound this: aggregates
// nest, and each element costs about 100 bytes however short it is on the
// wire, so a 16 MiB reply of small integers within the count limits would
// take some 500 MiB. The cost of an aggregate's elements is counted when
// its header arrives, before any of them is allocated. Default:
// DefaultMaxReplyMemory (128 MiB), which holds a DefaultMaxBulkLen bulk, or
// a flat DefaultMaxAggregateLen array of strings up to 24 bytes long.
func WithMaxReplyMemory(n int) ReaderOption {
	return func(r *Reader) { r.maxReplyMemory = n }
}

// WithBufferSize sets the size of the Reader's read buffer, which is also the
// longest line it reads without copying. Default: DefaultBufferSize (16 KiB).
func WithBufferSize(n int) ReaderOption {
	return func(r *Reader) { r.bufferSize = n }
}

// WithRESP2 makes the Reader refuse the RESP3-only frame types, push frames
// among them, as a connection that did not negotiate RESP3 must. Default:
// every RESP3 type is accepted.
func WithRESP2() ReaderOption {
	return func(r *Reader) { r.resp2 = true }
}
