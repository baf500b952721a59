package cmdstats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformed is matched when a commandstats line cannot be read: a
// reading that skipped it would count wrong.
var ErrMalformed = errors.New("cmdstats: malformed INFO commandstats")

// Counters are one command's counters.
type Counters struct {
	// Calls counts the executions, those from inside scripts and those
	// that failed included.
	Calls int64
	// Usec is the time the executions took in the server, in
	// microseconds.
	Usec int64
	// RejectedCalls counts the calls refused before running (not in
	// Calls); Redis 7 and later.
	RejectedCalls int64
	// FailedCalls counts the executions that returned an error (in
	// Calls); Redis 7 and later.
	FailedCalls int64
}

// Stats are counters by command, named as INFO names them: "get",
// "evalsha", and subcommands as "client|setname".
type Stats map[string]Counters

// linePrefix starts each command's line.
const linePrefix = "cmdstat_"

// Parse reads the cmdstat_ lines of an INFO reply, such as
//
//	cmdstat_get:calls=21,usec=175,usec_per_call=8.33,rejected_calls=0,failed_calls=0
//
// The reply may hold other sections (INFO everything): every line that
// does not begin with cmdstat_ is skipped. A cmdstat_ line with no name,
// without calls, with a counter that is not a non-negative integer, or
// naming a command a second time, is an error matching ErrMalformed.
// Fields Parse does not know (usec_per_call among them, which Usec/Calls
// gives) are skipped, and so are missing counters other than calls
// (servers before Redis 7 have no rejected_calls or failed_calls).
func Parse(info string) (Stats, error) {
	s := Stats{}
	for i, line := range strings.Split(info, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if !strings.HasPrefix(line, linePrefix) {
			continue
		}
		name, c, err := parseLine(strings.TrimPrefix(line, linePrefix))
		if err != nil {
			return nil, fmt.Errorf("%w: line %d %s: %w", ErrMalformed, i+1, quote(line), err)
		}
		if _, dup := s[name]; dup {
			return nil, fmt.Errorf("%w: line %d: command %s a second time", ErrMalformed, i+1, quote(name))
		}
		s[name] = c
	}
	return s, nil
}

// parseLine reads "name:calls=1,usec=2,...".
func parseLine(line string) (string, Counters, error) {
	name, fields, ok := strings.Cut(line, ":")
	if !ok || name == "" {
		return "", Counters{}, errors.New("no command name")
	}
	var c Counters
	seen := map[string]bool{}
	for f := range strings.SplitSeq(fields, ",") {
		key, val, _ := strings.Cut(f, "=")
		var dst *int64
		switch key {
		case "calls":
			dst = &c.Calls
		case "usec":
			dst = &c.Usec
		case "rejected_calls":
			dst = &c.RejectedCalls
		case "failed_calls":
			dst = &c.FailedCalls
		default:
			continue
		}
		if seen[key] {
			return "", Counters{}, fmt.Errorf("%s twice", key)
		}
		seen[key] = true
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil || n < 0 {
			return "", Counters{}, fmt.Errorf("%s=%s is not a count", key, quote(val))
		}
		*dst = n
	}
	if !seen["calls"] {
		return "", Counters{}, errors.New("no calls field")
	}
	return name, c, nil
}

// quote keeps a piece of hostile input short and on one line in an error.
func quote(s string) string {
	const limit = 80
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return strconv.Quote(s)
}
