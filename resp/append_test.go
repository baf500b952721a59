package resp_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/resp"
)

func TestAppendCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "no args", args: nil, want: "*0\r\n"},
		{name: "PING", args: []string{"PING"}, want: "*1\r\n$4\r\nPING\r\n"},
		{name: "SET", args: []string{"SET", "key", "value"}, want: "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"},
		{name: "empty arg", args: []string{"ECHO", ""}, want: "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"},
		{name: "binary arg", args: []string{"SET", "k", "a\r\nb\x00\xff"}, want: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$6\r\na\r\nb\x00\xff\r\n"},
		{name: "long arg", args: []string{"SET", "k", strings.Repeat("v", 1000)}, want: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n" + strings.Repeat("v", 1000) + "\r\n"},
		{name: "twelve args", args: strings.Split("a b c d e f g h i j k l", " "), want: "*12\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n$1\r\nh\r\n$1\r\ni\r\n$1\r\nj\r\n$1\r\nk\r\n$1\r\nl\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Strings.
			require.Equal(t, tc.want, string(resp.AppendCommand(nil, tc.args...)))

			// Byte slices.
			bargs := make([][]byte, len(tc.args))
			for i, a := range tc.args {
				bargs[i] = []byte(a)
			}
			require.Equal(t, tc.want, string(resp.AppendCommand(nil, bargs...)))

			// Header and bulks by hand, mixing the two.
			dst := resp.AppendArrayLen(nil, len(tc.args))
			for i, a := range tc.args {
				if i%2 == 0 {
					dst = resp.AppendBulk(dst, a)
				} else {
					dst = resp.AppendBulk(dst, []byte(a))
				}
			}
			require.Equal(t, tc.want, string(dst))

			// Appending keeps what dst held.
			prefix := "*1\r\n$4\r\nPING\r\n"
			require.Equal(t, prefix+tc.want, string(resp.AppendCommand([]byte(prefix), tc.args...)))
		})
	}
}

// Named string and byte slice types are accepted as well.
type (
	key   string
	token []byte
)

func TestAppendNamedTypes(t *testing.T) {
	require.Equal(t, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", string(resp.AppendCommand(nil, key("GET"), key("k"))))
	require.Equal(t, "$2\r\n\x01\x02\r\n", string(resp.AppendBulk(nil, token{1, 2})))
}

func TestAppendBulk(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"", "$0\r\n\r\n"},
		{"x", "$1\r\nx\r\n"},
		{"\r\n", "$2\r\n\r\n\r\n"},
		{strings.Repeat("z", 12345), "$12345\r\n" + strings.Repeat("z", 12345) + "\r\n"},
	} {
		require.Equal(t, tc.want, string(resp.AppendBulk(nil, tc.in)))
		require.Equal(t, tc.want, string(resp.AppendBulk(nil, []byte(tc.in))))
		require.Equal(t, "+"+tc.want, string(resp.AppendBulk([]byte("+"), tc.in)))
	}
}

func TestAppendArrayLen(t *testing.T) {
	for n, want := range map[int]string{0: "*0\r\n", 1: "*1\r\n", 10: "*10\r\n", 1 << 20: "*1048576\r\n"} {
		require.Equal(t, want, string(resp.AppendArrayLen(nil, n)))
	}
}

// TestAppendRoundTrip encodes commands back to back into one buffer, as a
// connection coalesces them, and reads them back as arrays of bulks.
func TestAppendRoundTrip(t *testing.T) {
	commands := [][]string{
		{"PING"},
		{"SET", "{lock}:k", "tok\r\nen", "NX", "PX", "30000"},
		{"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "{lock}:k", ""},
		{"ECHO", strings.Repeat("\x00\r\n", 300)},
		{"ECHO", strings.Repeat("big", 40000)},
		{},
	}
	var buf []byte
	for i, c := range commands {
		if i%2 == 0 {
			buf = resp.AppendCommand(buf, c...)
			continue
		}
		buf = resp.AppendArrayLen(buf, len(c))
		for _, a := range c {
			buf = resp.AppendBulk(buf, []byte(a))
		}
	}
	for _, o := range [][]resp.ReaderOption{nil, resp2(), opts(resp.WithBufferSize(16))} {
		r := resp.NewReader(bytes.NewReader(buf), o...)
		for _, c := range commands {
			v, err := r.Read()
			require.NoError(t, err)
			require.Equal(t, resp.Array, v.Type)
			require.Len(t, v.Elems, len(c))
			for i, a := range c {
				require.Equal(t, bulk(a), v.Elems[i])
			}
		}
		_, err := r.Read()
		require.ErrorIs(t, err, io.EOF)
	}
}

func TestAppendAllocs(t *testing.T) {
	dst := make([]byte, 0, 256)
	bargs := [][]byte{[]byte("SET"), []byte("key"), []byte("value")}
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"AppendCommand strings", func() { dst = resp.AppendCommand(dst[:0], "SET", "key", "value") }},
		{"AppendCommand byte slices", func() { dst = resp.AppendCommand(dst[:0], bargs...) }},
		{"AppendArrayLen and AppendBulk", func() {
			dst = resp.AppendArrayLen(dst[:0], 2)
			dst = resp.AppendBulk(dst, "GET")
			dst = resp.AppendBulk(dst, bargs[1])
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, tc.f))
		})
	}
}
