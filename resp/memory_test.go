package resp_test

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

// integers returns an array of n integer frames: 4 bytes on the wire and a
// whole Value in memory each.
func integers(n int) string {
	return "*" + strconv.Itoa(n) + "\r\n" + strings.Repeat(":1\r\n", n)
}

// measureRead reads one frame from r and returns it with the error, the
// heap it holds once collected (the frame kept alive), and the bytes
// allocated while reading.
func measureRead(r *resp.Reader) (v resp.Value, err error, held int64, allocated uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err = r.Read()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return v, err, int64(after.HeapAlloc) - int64(before.HeapAlloc), after.TotalAlloc - before.TotalAlloc
}

// TestReplyMemoryIsBounded reads a 16 MiB reply within every count limit
// that decodes to some 400 MiB of Values (four arrays of the largest length,
// of small integers), and replies that the default budget must still admit.
func TestReplyMemoryIsBounded(t *testing.T) {
	const budget = resp.DefaultMaxReplyMemory
	const margin = 16 << 20 // the reader's buffers, the test's strings, the runtime's noise

	t.Run("hostile", func(t *testing.T) {
		inner := integers(resp.DefaultMaxAggregateLen)
		in := "*4\r\n" + strings.Repeat(inner, 4) + "+next\r\n"
		r := resp.NewReader(strings.NewReader(in))
		_, err, held, allocated := measureRead(r)
		t.Logf("held %d MiB, allocated %d MiB while reading", held>>20, allocated>>20)

		require.ErrorIs(t, err, resp.ErrLimit)
		require.Less(t, held, int64(margin), "heap held after a reply over the budget")
		// One inner array fits the budget and is built before the next
		// one's header is refused; building it by doubling allocates
		// about twice what it keeps.
		require.Less(t, allocated, uint64(2*budget+margin), "bytes allocated while reading")

		next, err := r.Read()
		require.NoError(t, err)
		require.Equal(t, simple("next"), next)
	})

	t.Run("flat array of the largest length", func(t *testing.T) {
		v, err, held, allocated := measureRead(resp.NewReader(strings.NewReader(integers(resp.DefaultMaxAggregateLen))))
		t.Logf("held %d MiB, allocated %d MiB while reading", held>>20, allocated>>20)
		require.NoError(t, err)
		require.Len(t, v.Elems, resp.DefaultMaxAggregateLen)
		// What the budget counts is what is kept.
		require.Less(t, held, int64(resp.DefaultMaxAggregateLen*valueSize+margin))
	})

	t.Run("bulk of the largest length", func(t *testing.T) {
		payload := strings.Repeat("v", resp.DefaultMaxBulkLen)
		in := "$" + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
		v, err, held, _ := measureRead(resp.NewReader(strings.NewReader(in)))
		require.NoError(t, err)
		require.Equal(t, len(payload), len(v.Str))
		require.Less(t, held, int64(resp.DefaultMaxBulkLen+margin))
	})
}
