package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// inspectTarget is the lock inspect reads, as every document names it:
// the server, with its password (if any) hidden, the key, the key's name
// on the server and the mode it is read as.
type inspectTarget struct {
	Addr     string `json:"addr"`
	Key      string `json:"key"`
	RedisKey string `json:"redis_key"`
	Mode     string `json:"mode"`
}

func newInspectTarget(f inspectFlags, mode lockMode) inspectTarget {
	return inspectTarget{Addr: redactAddr(f.addr), Key: f.key, RedisKey: f.prefix + "{" + f.key + "}", Mode: mode.String()}
}

// writeText prints the line that names the lock.
func (t inspectTarget) writeText(w io.Writer) {
	mode := "(" + t.Mode + " mode)"
	if t.Mode == modeUnknown.String() {
		mode = "(mode unknown)"
	}
	reportLine(w, "lock", "%s on %s %s", t.RedisKey, t.Addr, mode)
}

// inspectReport is what inspect found, as --json prints it. The pointers
// are null where there is nothing to say: no holder, no TTL, or no token
// known.
type inspectReport struct {
	inspectTarget
	// ModeKeys is what the lock's keys tell of its mode (modeKeys).
	ModeKeys string  `json:"mode_keys"`
	Held     bool    `json:"held"`
	Holder   *string `json:"holder"`
	TTLms    *int64  `json:"ttl_ms"`
	Token    *uint64 `json:"token"`
	Wanted   bool    `json:"wanted"`
	// Queue is nil in fast mode, which reads no queue, and empty in fair
	// mode when nobody waits, as in an unknown mode where the keys hold
	// no queue.
	Queue []inspectWaiter `json:"queue"`

	// given is the mode --fair gave, modeUnknown without it; keys is
	// what the keys tell. They say how the mode is known.
	given lockMode
	keys  modeKeys
}

// inspectWaiter is one queued waiter, in the order they get the lock.
type inspectWaiter struct {
	Owner       string `json:"owner"`
	LeaseLeftMs int64  `json:"lease_left_ms"`
}

func newInspectReport(f inspectFlags, insp inspection) inspectReport {
	info := insp.info
	r := inspectReport{
		inspectTarget: newInspectTarget(f, insp.mode), ModeKeys: insp.keys.String(),
		Held: info.Held, Wanted: info.Wanted, given: f.mode, keys: insp.keys,
	}
	if insp.mode != modeFast {
		r.Queue = make([]inspectWaiter, 0, len(info.Queue))
	}
	if info.Held {
		ttl := info.TTL.Milliseconds()
		if info.TTL < 0 {
			ttl = -1
		}
		r.Holder, r.TTLms = &info.Holder, &ttl
		if info.Token != 0 {
			r.Token = &info.Token
		}
	}
	for _, w := range info.Queue {
		r.Queue = append(r.Queue, inspectWaiter{Owner: w.Owner, LeaseLeftMs: w.LeaseLeft.Milliseconds()})
	}
	return r
}

func (r inspectReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// warn writes on w, as a line of its own, that the keys say another mode
// than --fair gave, if they do: the view can then miss who waits.
func (r inspectReport) warn(w io.Writer) {
	if r.keys.contradicts(r.given) {
		fmt.Fprintf(w, "baton inspect: warning: %s reads %s as a %s lock, but %s\n", r.given.flag(), r.RedisKey, r.given, r.contradiction())
	}
}

// contradiction says how the keys contradict the mode --fair gave.
func (r inspectReport) contradiction() string {
	other := modeFast
	if r.given == modeFast {
		other = modeFair
	}
	return fmt.Sprintf("it has %s, which only a %s lock keeps: who waits for it may go unseen", other.ownKeys(), other)
}

// modeText says how the mode is known, or why it is not.
func (r inspectReport) modeText() string {
	switch {
	case r.given != modeUnknown && r.keys.contradicts(r.given):
		return fmt.Sprintf("%s, as %s says, but %s", r.given, r.given.flag(), r.contradiction())
	case r.given != modeUnknown:
		return fmt.Sprintf("%s, as %s says", r.given, r.given.flag())
	case r.keys.mode() != modeUnknown:
		m := r.keys.mode()
		return fmt.Sprintf("%s, as its keys tell: it has %s, which only a %s lock keeps", m, m.ownKeys(), m)
	case r.keys.fast && r.keys.fair:
		return fmt.Sprintf("unknown: keys of both modes, %s and %s, as if Lockers of both modes used it; both are shown",
			modeFast.ownKeys(), modeFair.ownKeys())
	}
	return fmt.Sprintf("unknown: no key that only one mode keeps (%s, %s): nobody has asked for it in either mode; --fair or --fair=false names the mode",
		modeFast.ownKeys(), modeFair.ownKeys())
}

// writeText prints the report for people: one aligned line per fact.
func (r inspectReport) writeText(w io.Writer) {
	r.inspectTarget.writeText(w)
	reportLine(w, "mode", "%s", r.modeText())
	if !r.Held {
		reportLine(w, "held by", "nobody: the lock is free")
		if r.Wanted && len(r.Queue) == 0 {
			reportLine(w, "asked for", "yes, by a waiter that has not taken it yet")
		}
	} else {
		reportLine(w, "held by", "%s (the start of its owner token)", *r.Holder)
		if *r.TTLms < 0 {
			reportLine(w, "TTL left", "none: the key never expires, which no baton client sets")
		} else {
			reportLine(w, "TTL left", "%v", time.Duration(*r.TTLms)*time.Millisecond)
		}
		if r.Token != nil {
			reportLine(w, "fencing token", "%d", *r.Token)
		} else {
			reportLine(w, "fencing token", "unknown: the lock is being handed over, or its counter expired")
		}
		reportLine(w, "asked to let go", "%s", yesNo(r.Wanted))
	}
	switch {
	case r.Queue == nil:
		reportLine(w, "queue", "none in fast mode (--fair reads a fair lock's queue)")
	case len(r.Queue) == 0:
		reportLine(w, "queue", "empty")
	default:
		reportLine(w, "queue", "%d waiting, in the order they get the lock", len(r.Queue))
		for i, q := range r.Queue {
			left := time.Duration(q.LeaseLeftMs) * time.Millisecond
			if left < 0 {
				fmt.Fprintf(w, "  %2d. %s  lease ran out %v ago: the next hand-off skips it\n", i+1, q.Owner, -left)
				continue
			}
			fmt.Fprintf(w, "  %2d. %s  lease left %v\n", i+1, q.Owner, left)
		}
	}
}

// reportLine prints one fact of inspect's view: its label, aligned, then
// the fact.
func reportLine(w io.Writer, label, format string, args ...any) {
	fmt.Fprintf(w, "%-17s%s\n", label+":", fmt.Sprintf(format, args...))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
