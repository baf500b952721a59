package resp

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// DefaultMaxBulkLen is the length of the longest bulk string a Reader reads
// unless told otherwise: see [WithMaxBulkLen].
const DefaultMaxBulkLen = 64 << 20

// Limits a Reader applies unless told otherwise; each option states its
// own.
const (
	defaultMaxAggregateLen = 1 << 20
	defaultMaxDepth        = 16
	defaultMaxReplyMemory  = 128 << 20
	// defaultBufferSize is the size of the buffer NewReader wraps a reader
	// in when it is not a *bufio.Reader.
	defaultBufferSize = 16 << 10
)

// WithMaxBulkLen caps the length of one bulk string, verbatim string, bulk
// error, or line of text (simple string, error, double, big number), in
// bytes. Default: [DefaultMaxBulkLen] (64 MiB); Redis itself accepts up to
// 512 MiB (proto-max-bulk-len), so raise it to read larger values, and
// [WithMaxReplyMemory] with it.
func WithMaxBulkLen(n int) ReaderOption {
	return func(r *Reader) { r.maxBulkLen = n }
}

// WithMaxAggregateLen caps the number of elements of one array, set or push
// frame; a map or attribute of n pairs counts as 2n, and the attributes
// before one value count together. Default: 1,048,576 (1 << 20).
func WithMaxAggregateLen(n int) ReaderOption {
	return func(r *Reader) { r.maxAggregateLen = n }
}

// WithMaxDepth caps how deeply aggregates may nest; a reply that is not an
// aggregate has depth 0, a flat array depth 1. Default: 16, far above what
// any Redis command replies with.
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
// its header arrives, before any of them is allocated. Default: 128 MiB,
// which holds a bulk of the default 64 MiB limit, or a flat array of
// 1,048,576 strings (the default aggregate limit) up to 24 bytes long.
func WithMaxReplyMemory(n int) ReaderOption {
	return func(r *Reader) { r.maxReplyMemory = n }
}

// WithRESP2 makes the Reader refuse the RESP3-only frame types, push frames
// among them, as a connection that did not negotiate RESP3 must. Default:
// every RESP3 type is accepted.
func WithRESP2() ReaderOption {
	return func(r *Reader) { r.resp2 = true }
}
