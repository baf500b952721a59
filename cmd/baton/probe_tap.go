package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/batonlock/baton/resp"
)

// tapRecording keeps the bytes of the wires' writes and reads while it is
// their recording. The probe's goroutine alone writes and reads the wires,
// and it reads the two sides of a round in the order they arrived, so the
// lines come in the order the bytes reached this host.
type tapRecording struct {
	lines []tapLine
}

// tapLine is one socket write or read.
type tapLine struct {
	// Side is "releaser" or "waiter"; Dir is "write" or "read".
	Side string `json:"side"`
	Dir  string `json:"dir"`
	// Bytes are the raw bytes, as a string (JSON escapes what it must).
	Bytes string `json:"bytes"`
}

// tapReport is the tapped PING+EVAL release: its lines, and whether the
// waiter heard first in that round.
type tapReport struct {
	NotificationFirst bool      `json:"notification_first"`
	Lines             []tapLine `json:"lines"`
}

func (r *tapRecording) add(side, dir string, p []byte) {
	r.lines = append(r.lines, tapLine{Side: side, Dir: dir, Bytes: string(p)})
}

// writeTap prints one line per RESP frame: "-> " for a write, "<- " for
// a read, the connection, which socket write or read the frame came in,
// and its bytes with CR, LF, backslash and anything unprintable escaped.
// PING and the script marked as frames 1/2 and 2/2 of one write are the
// single write that gives the waiter its head start.
func writeTap(w io.Writer, t *tapReport) {
	order := "the reply reached the releaser first"
	if t.NotificationFirst {
		order = "the notification reached the waiter first"
	}
	fmt.Fprintf(w, "\none PING+EVAL release on the wire (%s):\n", order)
	count := map[string]int{} // socket writes and reads so far, per side and direction
	for _, l := range t.Lines {
		arrow := "<- "
		if l.Dir == "write" {
			arrow = "-> "
		}
		count[l.Side+l.Dir]++
		fs := splitFrames(l.Bytes)
		for i, f := range fs {
			fmt.Fprintf(w, "%s%-8s %s %d, frame %d/%d: %s\n", arrow, l.Side, l.Dir, count[l.Side+l.Dir], i+1, len(fs), escapeRESP(f))
		}
	}
}

// splitFrames cuts raw RESP bytes into whole frames, read with the
// client's own reader; bytes that do not make a whole frame are the last
// piece, as they are.
func splitFrames(p string) []string {
	src := strings.NewReader(p)
	br := bufio.NewReader(src) // the reader's own buffer: what it holds is not decoded yet
	r := resp.NewReader(br)
	var frames []string
	for start := 0; start < len(p); {
		if _, err := r.Read(); err != nil {
			return append(frames, p[start:])
		}
		end := len(p) - src.Len() - br.Buffered()
		frames = append(frames, p[start:end])
		start = end
	}
	return frames
}

// escapeRESP makes raw RESP bytes readable on one line.
func escapeRESP(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
