// Package hangreport makes a test binary that hangs say where. Go's test
// timeout panics with a dump of every goroutine, thousands of lines for a
// package that runs servers and Lockers, of which a CI log keeps the
// tail. Wrapped by Watch, a test binary still running shortly before its
// -test.timeout prints instead a short report (the tests still running,
// then each distinct stack once, with how many goroutines wait there and
// for how long, longest first) and exits, so that the report is the last
// thing in the log:
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(hangreport.Watch(m))
//	}
package hangreport

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TestingM is what a TestMain runs: testing.M's Run, and what
// goleak.VerifyTestMain takes.
type TestingM interface {
	Run() int
}

// Watch returns m, whose Run reports and exits (status 2) if the tests
// are still running margin before -test.timeout: a tenth of the timeout,
// at most 30s. Without a timeout (-test.timeout 0) it only runs m.
func Watch(m TestingM) TestingM { return watched{m} }

type watched struct{ m TestingM }

func (w watched) Run() int {
	if !flag.Parsed() {
		flag.Parse()
	}
	timeout := testTimeout()
	if timeout <= 0 {
		return w.m.Run()
	}
	margin := min(timeout/10, 30*time.Second)
	t := time.AfterFunc(timeout-margin, func() {
		Write(os.Stderr, fmt.Sprintf("still running %v after the start, %v before -test.timeout", timeout-margin, margin))
		os.Exit(2)
	})
	defer t.Stop()
	return w.m.Run()
}

// testTimeout is -test.timeout, or 0.
func testTimeout() time.Duration {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return 0
	}
	d, err := time.ParseDuration(f.Value.String())
	if err != nil {
		return 0
	}
	return d
}

// Write writes the report of every goroutine to w, headed by why.
func Write(w io.Writer, why string) {
	fmt.Fprintf(w, "\n=== HANG REPORT: %s\n", why)
	groups := group(parse(allStacks()))
	if tests := runningTests(groups); len(tests) > 0 {
		fmt.Fprintf(w, "tests still running: %s\n", strings.Join(tests, ", "))
	}
	for i, g := range groups {
		if i == maxGroups {
			fmt.Fprintf(w, "... and %d more stacks\n", len(groups)-maxGroups)
			break
		}
		wait := "under a minute"
		if g.minutes > 0 {
			wait = fmt.Sprintf("%d minutes", g.minutes)
		}
		fmt.Fprintf(w, "\n%d goroutine(s) [%s], the longest waiting %s:\n", g.count, g.state, wait)
		for j, f := range g.frames {
			if j == maxFrames {
				fmt.Fprintf(w, "    ... %d more frames\n", len(g.frames)-maxFrames)
				break
			}
			fmt.Fprintf(w, "    %s\n", f)
		}
	}
	fmt.Fprintf(w, "=== END OF HANG REPORT\n")
}

// How much of the stacks the report shows: enough to see where each
// waits and who called it, little enough to stay in a log's tail.
const (
	maxGroups = 40
	maxFrames = 14
)

// allStacks is runtime.Stack of every goroutine, whole.
func allStacks() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutine is one goroutine of a dump: its state, how many minutes it
// has waited (the runtime says so from a minute on), and its frames as
// "function (file:line)".
type goroutine struct {
	state   string
	minutes int
	frames  []string
}

var header = regexp.MustCompile(`^goroutine \d+ \[([^\]]*)\]:$`)

// parse reads a dump of runtime.Stack(all) into goroutines.
func parse(dump []byte) []goroutine {
	var out []goroutine
	for _, block := range bytes.Split(dump, []byte("\n\n")) {
		lines := strings.Split(strings.TrimSpace(string(block)), "\n")
		m := header.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		g := goroutine{state: m[1]}
		if i := strings.LastIndex(g.state, ", "); i >= 0 && strings.HasSuffix(g.state, " minutes") {
			g.minutes, _ = strconv.Atoi(strings.TrimSuffix(g.state[i+2:], " minutes"))
			g.state = g.state[:i]
		}
		for i := 1; i+1 < len(lines); i += 2 {
			fn := lines[i]
			if created, ok := strings.CutPrefix(fn, "created by "); ok {
				fn, _, _ = strings.Cut(created, " in goroutine ")
				fn = "created by " + fn
			} else if p := strings.LastIndexByte(fn, '('); p > 0 && strings.HasSuffix(fn, ")") {
				fn = fn[:p] // the arguments, which differ between goroutines
			}
			loc := strings.TrimSpace(lines[i+1])
			if sp := strings.IndexByte(loc, ' '); sp > 0 {
				loc = loc[:sp] // the pc offset
			}
			g.frames = append(g.frames, fn+" ("+shortPath(loc)+")")
		}
		out = append(out, g)
	}
	return out
}

// shortPath keeps a file's last two path elements and its line.
func shortPath(loc string) string {
	parts := strings.Split(loc, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}

// stackGroup is the goroutines that share a state and frames.
type stackGroup struct {
	goroutine
	count int
}

// group merges goroutines with the same state and frames, the longest
// waiting first, then the most numerous.
func group(gs []goroutine) []stackGroup {
	index := map[string]int{}
	var out []stackGroup
	for _, g := range gs {
		key := g.state + "\n" + strings.Join(g.frames, "\n")
		if i, ok := index[key]; ok {
			out[i].count++
			out[i].minutes = max(out[i].minutes, g.minutes)
			continue
		}
		index[key] = len(out)
		out = append(out, stackGroup{goroutine: g, count: 1})
	}
	slices.SortStableFunc(out, func(a, b stackGroup) int {
		if c := cmp.Compare(b.minutes, a.minutes); c != 0 {
			return c
		}
		return cmp.Compare(b.count, a.count)
	})
	return out
}

// runningTests names the test functions that testing.tRunner is running:
// the frame it called.
func runningTests(groups []stackGroup) []string {
	var tests []string
	for _, g := range groups {
		for i, f := range g.frames {
			if strings.HasPrefix(f, "testing.tRunner") && i > 0 {
				name, _, _ := strings.Cut(g.frames[i-1], " (")
				if !strings.HasPrefix(name, "testing.") {
					tests = append(tests, name)
				}
			}
		}
	}
	slices.Sort(tests)
	return slices.Compact(tests)
}
