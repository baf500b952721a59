package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonlock/baton/internal/scenario"
)

// demoRow is one configuration's figures over its runs.
type demoRow struct {
	Config string `json:"config"`
	// Passed is, per run, how many of A's modifications passed B.
	Passed       []int   `json:"passed"`
	PassedMedian int     `json:"passed_median"`
	PassedMax    int     `json:"passed_max"`
	WaitMedianUS float64 `json:"wait_median_us"`
	WaitMaxUS    float64 `json:"wait_max_us"`
	// ModifyUS is the median uncontended Modify, over every run's samples'
	// medians.
	ModifyUS  float64 `json:"modify_us"`
	ExactRuns int     `json:"exact_runs"`
	Runs      int     `json:"runs"`
	// Bound is what baton's tests assert for the configuration; -1 where
	// it is measured only.
	Bound int `json:"bound"`
}

func summarize(cfg scenario.Config, results []scenario.Result) demoRow {
	row := demoRow{Config: cfg.Name, Runs: len(results), Bound: cfg.Bound}
	var waits, costs []time.Duration
	for _, r := range results {
		row.Passed = append(row.Passed, r.Passed)
		waits = append(waits, r.Waited)
		costs = append(costs, r.ModifyCost)
		if r.Exact {
			row.ExactRuns++
		}
	}
	sorted := slices.Sorted(slices.Values(row.Passed))
	row.PassedMedian, row.PassedMax = sorted[len(sorted)/2], sorted[len(sorted)-1]
	slices.Sort(waits)
	slices.Sort(costs)
	row.WaitMedianUS = micros(waits[len(waits)/2])
	row.WaitMaxUS = micros(waits[len(waits)-1])
	row.ModifyUS = micros(costs[len(costs)/2])
	return row
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func printDemoTable(w io.Writer, r demoReport) {
	fmt.Fprintf(w, "A: %d back-to-back Modify calls; B: one Modify after A's 10th; %d runs per row; passes counted %s.\n\n",
		r.Iterations, r.Runs, countingPhrase[r.Counting])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tA passed B (median / max)\tB's wait (median / max)\tuncontended Modify\tcount exact")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d / %d\t%s / %s\t%s\t%d of %d\n", row.Config, row.PassedMedian, row.PassedMax,
			fmtMicros(row.WaitMedianUS), fmtMicros(row.WaitMaxUS), fmtMicros(row.ModifyUS), row.ExactRuns, row.Runs)
	}
	_ = tw.Flush()
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "\nNot run: %s (%s).\n", strings.Join(r.Skipped, ", "), r.SkipReason)
	}
	fmt.Fprintf(w, "\n%s\n", r.Summary)
}

var countingPhrase = map[string]string{
	string(scenario.ServerOrder): "in the server's order",
	string(scenario.FromCall):    "from B's call (this server publishes no keyspace events to order them by)",
}

func fmtMicros(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.2f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

// demoSummary says in one plain sentence what the figures mean.
func demoSummary(rows []demoRow, counting scenario.Counting) string {
	find := func(name string) (demoRow, bool) {
		for _, r := range rows {
			if r.Config == name {
				return r, true
			}
		}
		return demoRow{}, false
	}
	exact := true
	batonMax, naiveMax := 0, 0
	for _, r := range rows {
		exact = exact && r.ExactRuns == r.Runs
		if r.Bound >= 0 {
			batonMax = max(batonMax, r.PassedMax)
		} else {
			naiveMax = max(naiveMax, r.PassedMax) // either release style
		}
	}
	counts := "every count was exact"
	if !exact {
		counts = "but some counts were NOT exact, which is a bug: please report it"
	}
	if _, ok := find("naive-eval"); ok {
		return fmt.Sprintf("The naive lock let A's back-to-back modifications pass the waiting B up to %d times; "+
			"baton passed B at most %s, the modification A was making when B asked, and %s.",
			naiveMax, times(batonMax), counts)
	}
	if counting == scenario.FromCall {
		return fmt.Sprintf("Baton's fair mode finished at most %d of A's modifications between B's call and B's own "+
			"(counted from the call, so including those before B's request reached the server), and %s.", batonMax, counts)
	}
	return fmt.Sprintf("Baton's fair mode passed the waiting B at most %s, the modification A was making when B asked, and %s.",
		times(batonMax), counts)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
