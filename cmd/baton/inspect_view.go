package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// redrawScreen moves a terminal's cursor home and erases the screen, for
// the next refresh to take the place of the last.
const redrawScreen = "\x1b[H\x1b[2J"

// inspectView prints the refreshes of inspect --watch on w. On a terminal
// each refresh redraws the screen; elsewhere (a file, a pipe) the
// refreshes follow one another, each ending with a blank line, so that
// nothing in a log is a redraw. With --json each is one document on a
// line of its own, terminal or not.
type inspectView struct {
	w      io.Writer
	f      inspectFlags
	redraw bool         // w is a terminal, and the view is text
	buf    bytes.Buffer // one refresh, written with one Write
}

func newInspectView(w io.Writer, f inspectFlags) *inspectView {
	return &inspectView{w: w, f: f, redraw: !f.json && isTerminal(w)}
}

// inspectFailure is a refresh that failed, as --json prints it: the lock
// and why.
type inspectFailure struct {
	inspectTarget
	Error string `json:"error"`
}

// show prints one refresh: the lock as insp has it or, when err is not
// nil, why the refresh failed, naming the lock in the mode --fair gave,
// as nothing was read to tell it. It fails only when w does.
func (v *inspectView) show(insp inspection, err error) error {
	v.buf.Reset()
	if v.f.json {
		var doc any = newInspectReport(v.f, insp)
		if err != nil {
			doc = inspectFailure{inspectTarget: newInspectTarget(v.f, v.f.mode), Error: oneLine(err)}
		}
		// Encode writes the document on one line, and the newline.
		if err := json.NewEncoder(&v.buf).Encode(doc); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	} else {
		v.writeText(insp, err)
	}
	if _, err := v.w.Write(v.buf.Bytes()); err != nil {
		return fmt.Errorf("writing the view: %w", err)
	}
	return nil
}

func (v *inspectView) writeText(insp inspection, err error) {
	if v.redraw {
		v.buf.WriteString(redrawScreen)
	}
	reportLine(&v.buf, "refreshed", "%s (every %v until interrupted)", time.Now().Format(time.TimeOnly+".000"), v.f.interval)
	if err != nil {
		newInspectTarget(v.f, v.f.mode).writeText(&v.buf)
		reportLine(&v.buf, "refresh failed", "%s", oneLine(err))
	} else {
		newInspectReport(v.f, insp).writeText(&v.buf)
	}
	if !v.redraw {
		v.buf.WriteString("\n")
	}
}
