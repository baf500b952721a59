package redistest

import (
	"net"
	"testing"

	"github.com/batonlock/baton/resp"
)

// Raw is a bare connection written and read by the calling goroutine, with
// nothing between the test and the socket: the baseline that benchmarks of
// the connection layer measure themselves against.
type Raw struct {
	conn net.Conn
	rd   *resp.Reader
}

// DialRaw connects to addr and closes the connection at t.Cleanup.
func DialRaw(t testing.TB, addr string) *Raw {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &Raw{conn: c, rd: resp.NewReader(c)}
}

// RoundTrip writes cmd, encoded RESP, and reads replies replies.
func (r *Raw) RoundTrip(t testing.TB, cmd []byte, replies int) { r.Do(t, cmd, replies) }

// Do writes cmd, encoded RESP, reads replies replies, and returns the
// last.
func (r *Raw) Do(t testing.TB, cmd []byte, replies int) resp.Value {
	if _, err := r.conn.Write(cmd); err != nil {
		t.Fatalf("redistest: raw write: %v", err)
	}
	var v resp.Value
	for range replies {
		var err error
		if v, err = r.rd.Read(); err != nil {
			t.Fatalf("redistest: raw read: %v", err)
		}
		if err := v.Err(); err != nil {
			t.Fatalf("redistest: raw reply: %v", err)
		}
	}
	return v
}

// BenchPing is a benchmark's loop of perOp bare PING round trips per
// iteration on a Raw connection to addr: the baseline that the connection
// layer's benchmarks compare themselves with, in the same run.
func BenchPing(b *testing.B, addr string, perOp int) {
	raw := DialRaw(b, addr)
	ping := resp.AppendCommand(nil, "PING")
	b.ReportAllocs()
	for b.Loop() {
		for range perOp {
			raw.RoundTrip(b, ping, 1)
		}
	}
}
