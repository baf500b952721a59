package main

import (
	"fmt"
	"io"
	"strings"
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

// writeTap prints one line per socket write or read: "-> " for a write,
// "<- " for a read, the connection, and the bytes with CR, LF, backslash
// and anything unprintable escaped, so that each write or read, however
// many frames it holds, stays on one line: PING and the script on one
// line is the one write that gives the waiter its head start.
func writeTap(w io.Writer, t *tapReport) {
	order := "the reply reached the releaser first"
	if t.NotificationFirst {
		order = "the notification reached the waiter first"
	}
	fmt.Fprintf(w, "\none PING+EVAL release on the wire (%s):\n", order)
	for _, l := range t.Lines {
		arrow := "<- "
		if l.Dir == "write" {
			arrow = "-> "
		}
		fmt.Fprintf(w, "%s%-8s %s\n", arrow, l.Side, escapeRESP(l.Bytes))
	}
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
