package resp_test

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

// errMoreRead is what the stream answers once its bytes are spent: a Read
// that returns it would have waited for the server.
var errMoreRead = errors.New("read past the bytes given")

// checkWhole fills a Reader with in, one byte per Fill, until Whole holds,
// and fails the test if Read then reads past the bytes buffered.
func checkWhole(t *testing.T, in string, opts ...resp.ReaderOption) {
	t.Helper()
	r := resp.NewReader(iotest.OneByteReader(&errAfter{data: []byte(in), err: errMoreRead}), opts...)
	for range len(in) + 1 {
		if r.Whole() {
			_, err := r.Read()
			require.NotErrorIs(t, err, errMoreRead, "Whole held with %d of %d bytes of %q buffered", r.Buffered(), len(in), in)
			return
		}
		if err := r.Fill(); err != nil {
			require.True(t, errors.Is(err, errMoreRead) || errors.Is(err, resp.ErrBufferFull), "Fill: %v", err)
			return
		}
	}
}

// Whole never holds while the frame still needs bytes from the stream, and
// holds once a good frame is all buffered.
func TestWholeHoldsOnlyForABufferedFrame(t *testing.T) {
	for _, tc := range goodFrames {
		t.Run(tc.name, func(t *testing.T) {
			checkWhole(t, tc.in, tc.opts...)
			r := resp.NewReader(&errAfter{data: []byte(tc.in), err: errMoreRead}, tc.opts...)
			for !r.Whole() {
				err := r.Fill()
				if errors.Is(err, resp.ErrBufferFull) {
					break // a frame longer than the buffer is never Whole
				}
				require.NoError(t, err, "the whole frame was buffered, and Whole did not hold")
			}
			got, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, withoutNaN(tc.want), withoutNaN(got))
		})
	}
	for _, tc := range badFrames {
		checkWhole(t, tc.in, tc.opts...)
	}
	for _, tc := range overLimitFrames {
		checkWhole(t, tc.in, tc.opts...)
	}
}

// Whole holds as soon as the buffer holds bytes that Read refuses, even
// where the frame around them would need more: a caller waiting for the
// rest would wait for bytes that cannot make the frame good.
func TestWholeHoldsForARefusalBeforeTheFrameEnds(t *testing.T) {
	long := strings.Repeat("1", 65)
	for _, in := range []string{
		"*2\r\n%-1\r\n",           // only bulk strings and arrays are null as -1
		"*2\r\n|-1\r\n",           // nor attributes
		"*2\r\n$-2\r\n",           // nor any length under -1
		"*2\r\n:" + long + "\r\n", // a number line over 64 bytes
		"*2\r\n*" + long + "\r\n", // a length line over 64 bytes
	} {
		r := resp.NewReader(&errAfter{data: []byte(in), err: errMoreRead})
		require.NoError(t, r.Fill())
		require.True(t, r.Whole(), "%q", in)
		_, err := r.Read()
		require.ErrorIs(t, err, resp.ErrProtocol, "%q", in)
	}
}

func TestFillStopsAtAFullBuffer(t *testing.T) {
	in := "$100\r\n" + strings.Repeat("x", 100) + "\r\n"
	r := resp.NewReader(strings.NewReader(in), resp.WithBufferSize(16))
	for r.Buffered() < 16 {
		require.NoError(t, r.Fill())
	}
	require.False(t, r.Whole())
	require.ErrorIs(t, r.Fill(), resp.ErrBufferFull)
	v, err := r.Read()
	require.NoError(t, err)
	require.Len(t, v.Str, 100)
}

// A Fill that fails leaves the Reader usable: a timed-out read is retried.
func TestAFailedFillIsNotKept(t *testing.T) {
	r := resp.NewReader(&errAfter{err: errMoreRead})
	require.ErrorIs(t, r.Fill(), errMoreRead)
	require.False(t, r.Whole())
	require.ErrorIs(t, r.Fill(), errMoreRead)
}

// FuzzWhole checks on any bytes, with the default limits and with tight
// ones, that Whole never holds while Read would still read from the stream.
func FuzzWhole(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), false, false)
	}
	f.Add([]byte("*2000000000\r\n:1\r\n?\r\n"), false, true)
	f.Add([]byte("\n"), true, false)
	f.Fuzz(func(t *testing.T, in []byte, resp2, tight bool) {
		var opts []resp.ReaderOption
		if resp2 {
			opts = append(opts, resp.WithRESP2())
		}
		if tight {
			// Frames over these limits are read past, not decoded.
			opts = append(opts, resp.WithMaxBulkLen(8), resp.WithMaxAggregateLen(4), resp.WithMaxDepth(3), resp.WithMaxReplyMemory(512))
		}
		checkWhole(t, string(in), opts...)
	})
}

func TestNextTypeLooksAtTheBufferOnly(t *testing.T) {
	r := resp.NewReader(strings.NewReader(">2\r\n+a\r\n+b\r\n:1\r\n"))
	_, ok := r.NextType()
	require.False(t, ok, "nothing buffered yet, and NextType reads nothing")
	require.NoError(t, r.Fill())
	typ, ok := r.NextType()
	require.True(t, ok)
	require.Equal(t, resp.Push, typ)
	_, err := r.Read()
	require.NoError(t, err)
	typ, ok = r.NextType()
	require.True(t, ok)
	require.Equal(t, resp.Integer, typ)
	_, err = r.Read()
	require.NoError(t, err)
	_, ok = r.NextType()
	require.False(t, ok, "all read")
}
