package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/batonlock/baton/lock"
)

// inspectTarget is the lock inspect reads, as every document names it:
// the server, with its password (if any) hidden, the key, the key's name
// on the server and the mode.
type inspectTarget struct {
	Addr     string `json:"addr"`
	Key      string `json:"key"`
	RedisKey string `json:"redis_key"`
	Mode     string `json:"mode"`
}

func newInspectTarget(f inspectFlags) inspectTarget {
	t := inspectTarget{Addr: redactAddr(f.addr), Key: f.key, RedisKey: f.prefix + "{" + f.key + "}", Mode: "fast"}
	if f.fair {
		t.Mode = "fair"
	}
	return t
}

// writeText prints the line that names the lock.
func (t inspectTarget) writeText(w io.Writer) {
	reportLine(w, "lock", "%s on %s (%s mode)", t.RedisKey, t.Addr, t.Mode)
}

// inspectReport is what inspect found, as --json prints it. The pointers
// are null where there is nothing to say: no holder, no TTL, or no token
// known.
type inspectReport struct {
	inspectTarget
	Held   bool    `json:"held"`
	Holder *string `json:"holder"`
	TTLms  *int64  `json:"ttl_ms"`
	Token  *uint64 `json:"token"`
	Wanted bool    `json:"wanted"`
	// Queue is nil in fast mode, which reads no queue, and empty in fair
	// mode when nobody waits.
	Queue []inspectWaiter `json:"queue"`
}

// inspectWaiter is one queued waiter, in the order they get the lock.
type inspectWaiter struct {
	Owner       string `json:"owner"`
	LeaseLeftMs int64  `json:"lease_left_ms"`
}

func newInspectReport(f inspectFlags, info lock.Info) inspectReport {
	r := inspectReport{inspectTarget: newInspectTarget(f), Held: info.Held, Wanted: info.Wanted}
	if f.fair {
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

// writeText prints the report for people: one aligned line per fact.
func (r inspectReport) writeText(w io.Writer) {
	r.inspectTarget.writeText(w)
	if !r.Held {
		reportLine(w, "held by", "nobody: the lock is free")
		if r.Wanted && r.Mode == "fast" {
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
