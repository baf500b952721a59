package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/batonlock/baton/internal/latency"
)

// uncontendedIntro introduces scenario 1's first table.
const uncontendedIntro = `
### Uncontended Lock+Unlock

%d rounds of %d operations per implementation, interleaved. Each figure is
the median over rounds; each ratio is the median of the per-round ratios to
%s. CPU is the client process's user+system time per operation, server
CPU the server process's (INFO cpu); cmds is the server's commands per
operation, from INFO commandstats, commands run inside scripts included.
`

// modifyIntro introduces scenario 1's second table.
const modifyIntro = `
### Uncontended read-modify-write

A counter in Redis read, incremented and written back under the lock.
With each lock, the state goes through a go-redis client of the
instance's own between Lock and Unlock: four round trips. With baton's
manager, the read shares the acquire's write and the write-back the
release's: two round trips. The floor is two PINGs. %d rounds of %d
operations per row, interleaved; ratios to %s, in the same round; CPU
and cmds/op as above.
`

// writeUncontendedTable writes scenario 1's rows as a markdown table
// under intro, formatted with rounds, ops and the baseline's name.
func writeUncontendedTable(w io.Writer, intro string, rows []row, rounds, ops int) error {
	_, err := fmt.Fprintf(w, intro+`
| implementation | p50 | p99 | CPU µs/op | server CPU µs/op | cmds/op | p50 ÷ %[3]s | p99 ÷ %[3]s | CPU ÷ %[3]s | server CPU ÷ %[3]s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
`, rounds, ops, baseline)
	if err != nil {
		return err
	}
	for _, r := range rows {
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.name, latency.Format(r.p50), latency.Format(r.p99), micros(r.cpu), micros(r.serverCPU), asOne(r.cmds),
			times(r.p50Ratio), times(r.p99Ratio), times(r.cpuRatio), times(r.srvRatio))
		if err != nil {
			return err
		}
	}
	return nil
}

// micros writes d in microseconds with one decimal.
func micros(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 1, 64)
}

// times writes a ratio as "1.23×", or "–" where there is none.
func times(x float64) string {
	if x == 0 {
		return "–"
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + "×"
}

// writeFloorSpread writes the lowest and highest p50 of the floor over
// the rounds. On a shared or virtual machine the floor itself can move
// between modes several times apart (how fast an idle CPU wakes for a
// reply); a wide spread says the other rows moved with it.
func writeFloorSpread(w io.Writer, samples [][]sample, floor int) error {
	if floor < 0 || len(samples) == 0 {
		return nil
	}
	lo, hi := samples[0][floor].lat.P50, samples[0][floor].lat.P50
	for _, round := range samples {
		lo, hi = min(lo, round[floor].lat.P50), max(hi, round[floor].lat.P50)
	}
	_, err := fmt.Fprintf(w, "\nThe floor's p50 ranged from %s to %s over the rounds.\n", latency.Format(lo), latency.Format(hi))
	return err
}
