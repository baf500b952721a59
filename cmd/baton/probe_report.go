package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// headStartThreshold is the share of rounds, in percent, in which
// PING+EVAL must be notification-first for the verdict to say fast mode
// gets its head start. The probe reads the order from the kernel, so a
// server that keeps it scores 100% (every run on redis-server 7.0.15
// did); where the order is a race (a proxy, I/O threads at work) it
// scores well under. The margin under 100% keeps a rare reordering on the
// way, such as a retransmission on a real network, from flipping the
// verdict.
const headStartThreshold = 90.0

// probeReport is everything the probe prints, as text or as JSON.
type probeReport struct {
	Addr             string        `json:"addr"`
	Server           serverFacts   `json:"server"`
	Key              string        `json:"key"`
	Rounds           int           `json:"rounds"`
	Styles           []styleResult `json:"styles"`
	ThresholdPercent float64       `json:"head_start_threshold_percent"`
	HeadStart        bool          `json:"head_start"`
	Verdict          string        `json:"verdict"`
	Tap              *tapReport    `json:"tap,omitempty"`
}

// styleResult counts, for one release style, the rounds in which the
// waiter's del event arrived first and those in which the releaser's
// reply did. Error is set, and the counts stop, where the server refused
// the style.
type styleResult struct {
	Style             string  `json:"style"`
	NotificationFirst int     `json:"notification_first"`
	ReplyFirst        int     `json:"reply_first"`
	Percent           float64 `json:"notification_first_percent"`
	Error             string  `json:"error,omitempty"`
}

func (r *styleResult) add(notificationFirst bool) {
	if notificationFirst {
		r.NotificationFirst++
	} else {
		r.ReplyFirst++
	}
	r.Percent = 100 * float64(r.NotificationFirst) / float64(r.NotificationFirst+r.ReplyFirst)
}

// decide sets the verdict from the PING+EVAL figures.
func (rep *probeReport) decide() {
	var pe styleResult
	for _, r := range rep.Styles {
		if r.Style == pingEvalStyle {
			pe = r
		}
	}
	who := "The server at " + rep.Addr
	if rep.Server.Version != "" {
		who += " (" + rep.Server.Name + " " + rep.Server.Version + ")"
	}
	counts := fmt.Sprintf("%d of %d rounds", pe.NotificationFirst, pe.NotificationFirst+pe.ReplyFirst)
	rep.HeadStart = pe.Percent >= rep.ThresholdPercent
	if rep.HeadStart {
		rep.Verdict = fmt.Sprintf("%s keeps notification-first for PING+EVAL (%s, at least %.0f%% needed), so fast mode gets its head start here.",
			who, counts, rep.ThresholdPercent)
		return
	}
	rep.Verdict = fmt.Sprintf("%s, or a proxy in front of it, does not keep notification-first for PING+EVAL (%s, under the %.0f%% needed), so fast mode gets no head start here: use fair mode (lock.WithFair).",
		who, counts, rep.ThresholdPercent)
}

// writeText prints the report for a person.
func (rep *probeReport) writeText(w io.Writer) {
	f := rep.Server
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	server := "version unknown (INFO refused: " + f.InfoError + ")"
	if f.InfoError == "" {
		server = f.Name + " " + f.Version
	}
	fmt.Fprintf(tw, "server\t%s, %s\n", rep.Addr, server)
	if f.ConfigAvailable {
		fmt.Fprintf(tw, "CONFIG\tavailable\n")
	} else {
		fmt.Fprintf(tw, "CONFIG\trefused (%s)\n", f.ConfigError)
	}
	fmt.Fprintf(tw, "io-threads\t%s (io-threads-do-reads %s)\n", intOrUnknown(f.IOThreads), stringOrUnknown(f.IOThreadsDoReads))
	fmt.Fprintf(tw, "keyspace events\t%s\n", describeEvents(f.KeyspaceEvents))
	fmt.Fprintf(tw, "rounds\t%d per style, on key %s\n", rep.Rounds, rep.Key)
	_ = tw.Flush()

	fmt.Fprintln(w)
	// Figures align right; the names, padded here, stay flush left.
	name := func(s string) string { return fmt.Sprintf("%-*s", len(pingEvalStyle), s) }
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tnotification first\t\treply first\t\n", name("release"))
	for _, r := range rep.Styles {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\trefused\t\t\t\n", name(r.Style))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%d\t\n", name(r.Style), r.NotificationFirst, r.Percent, r.ReplyFirst)
	}
	_ = tw.Flush()
	for _, r := range rep.Styles {
		if r.Error != "" {
			fmt.Fprintf(w, "%s refused by the server: %s\n", r.Style, r.Error)
		}
	}
	fmt.Fprintf(w, "\nverdict: %s\n", rep.Verdict)
	if rep.Tap != nil {
		writeTap(w, rep.Tap)
	}
}

func describeEvents(ks keyspaceFacts) string {
	var s string
	switch {
	case ks.Setting == nil:
		s = "published (notify-keyspace-events unreadable without CONFIG; a test DEL was heard)"
	case ks.TurnedOn == "":
		s = fmt.Sprintf("published (notify-keyspace-events %q)", *ks.Setting)
	default:
		s = fmt.Sprintf("off (notify-keyspace-events %q): set to %q for the probe", *ks.Setting, ks.TurnedOn)
		switch {
		case ks.Restored:
			s += " and restored"
		case ks.RestoreNote != "":
			s += "; " + ks.RestoreNote
		default:
			s += "; NOT restored"
		}
	}
	return s
}

func intOrUnknown(n *int) string {
	if n == nil {
		return "unknown"
	}
	return strconv.Itoa(*n)
}

func stringOrUnknown(s *string) string {
	if s == nil {
		return "unknown"
	}
	return *s
}
