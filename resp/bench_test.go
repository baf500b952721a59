package resp_test

import (
	"testing"

	"github.com/batonlock/baton/resp"
)

// cycle is an endless stream that repeats data, so that a benchmark loop
// measures decoding and not the making of its input.
type cycle struct {
	data []byte
	off  int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], c.data[c.off:])
		n += m
		c.off = (c.off + m) % len(c.data)
	}
	return n, nil
}

func benchmarkRead(b *testing.B, frame string) {
	r := resp.NewReader(&cycle{data: []byte(frame)})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadSimpleString(b *testing.B) { benchmarkRead(b, "+OK\r\n") }

func BenchmarkReadInteger(b *testing.B) { benchmarkRead(b, ":1234567\r\n") }

func BenchmarkReadBulk16(b *testing.B) { benchmarkRead(b, "$16\r\n0123456789abcdef\r\n") }

func BenchmarkReadPubSubMessage(b *testing.B) {
	benchmarkRead(b, "*3\r\n$7\r\nmessage\r\n$12\r\n{lock}:chan1\r\n$32\r\n0123456789abcdef0123456789abcdef\r\n")
}

func BenchmarkAppendCommand(b *testing.B) {
	dst := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		dst = resp.AppendCommand(dst[:0], "SET", "{lock}:key", "0123456789abcdef0123456789abcdef")
	}
	b.SetBytes(int64(len(dst)))
}
