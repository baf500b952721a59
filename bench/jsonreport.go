package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/batonlock/baton/internal/cmdstats"
)

// jsonReport is the document that --json prints on stdout, in place of
// the markdown report (which goes to stderr with the progress): the run,
// and for each server configuration the rows of each scenario it ran.
//
// A row is an object with "impl", the implementation's id as --impls
// takes it ("baton-fast+manager" and "baton-fair+manager" for the
// manager's read-modify-write rows, and "...+manager-replay" for the
// replay of each manager's Modify), and the scenario's figures, each the
// median over rounds as in the markdown tables:
//
//   - "uncontended" and "read-modify-write": p50_us, p99_us,
//     cpu_us_per_op, server_cpu_us_per_op, cmds_per_op;
//   - "throughput": ops_per_s, stalled;
//   - "hand-off": acq_per_s, handoff_p50_us, handoff_p99_us, kept,
//     wait_p99_us, wait_max_us, jain, cmds_per_acq,
//     threaded_writes_per_acq;
//   - "remote-waiter": passed_over_p50, passed_over_p90,
//     passed_over_max, trials, trials_never_passed, trials_capped,
//     trials_stalled, wait_p50_us, wait_p90_us, wait_max_us;
//   - "server-cost": commands_per_acq, an object of each command's calls
//     per acquisition in the hand-off rounds;
//   - "lost-lease": losses, missed, notice_p50_us, notice_p99_us,
//     notice_max_us, the times over all the losses heard, for the locks
//     that can tell a holder of a lost lock.
//
// Where the baseline (baton fast) ran, "ratios" holds the median of the
// per-round ratios to it, keyed by the figure's name (for the remote
// waiter, "wait_us": the per-trial ratios of the wait; for the lost
// lease, "notice_us": the per-loss ratios of the notice): the figure to
// compare across runs on a noisy machine. A manager row's
// "replay_ratios" holds its ratios to its replay's row, the same way.
type jsonReport struct {
	Command string       `json:"command"`
	Date    string       `json:"date"`
	Machine string       `json:"machine"`
	Servers []jsonServer `json:"servers"`
}

// jsonServer is one server configuration's part of the report.
type jsonServer struct {
	Label     string         `json:"label"`
	Version   string         `json:"version"`
	Placement string         `json:"placement"`
	Scenarios []jsonScenario `json:"scenarios"`
}

// jsonScenario is one scenario's rows, an implementation each.
type jsonScenario struct {
	Scenario string    `json:"scenario"`
	Rows     []jsonRow `json:"rows"`
}

// jsonRow is one implementation's figures; see jsonReport for the keys.
type jsonRow map[string]any

// addServer starts a server configuration's part. A nil report, without
// --json, records nothing.
func (r *jsonReport) addServer(label, version, placement string) {
	if r != nil {
		r.Servers = append(r.Servers, jsonServer{Label: label, Version: version, Placement: placement, Scenarios: []jsonScenario{}})
	}
}

// addScenario adds a scenario's rows to the last server's part.
func (r *jsonReport) addScenario(name string, rows []jsonRow) {
	if r == nil || len(r.Servers) == 0 {
		return
	}
	s := &r.Servers[len(r.Servers)-1]
	s.Scenarios = append(s.Scenarios, jsonScenario{Scenario: name, Rows: rows})
}

// write prints the report as one JSON document.
func (r *jsonReport) write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// microseconds is d, or a duration's figure in nanoseconds, in
// microseconds.
func microseconds[T time.Duration | float64](d T) float64 { return float64(d) / 1e3 }

// uncontendedRows are scenario 1's tables' rows.
func uncontendedRows(ids []string, rows []row, base int) []jsonRow {
	out := make([]jsonRow, len(rows))
	for i, r := range rows {
		out[i] = jsonRow{
			"impl": ids[i], "p50_us": microseconds(r.p50), "p99_us": microseconds(r.p99),
			"cpu_us_per_op": microseconds(r.cpu), "server_cpu_us_per_op": microseconds(r.serverCPU), "cmds_per_op": r.cmds,
		}
		if base >= 0 {
			out[i]["ratios"] = map[string]float64{
				"p50_us": r.p50Ratio, "p99_us": r.p99Ratio, "cpu_us_per_op": r.cpuRatio, "server_cpu_us_per_op": r.srvRatio,
			}
		}
	}
	return out
}

// figuresRows are the rows of a scenario whose table is cols.
func figuresRows(ids []string, cols []column, samples [][]figures, base int) []jsonRow {
	out := make([]jsonRow, len(ids))
	for i, id := range ids {
		row, ratios := jsonRow{"impl": id}, map[string]float64{}
		for k, c := range cols {
			figure, ratio := columnMedians(samples, i, k, base)
			if c.nanos {
				figure = microseconds(figure)
			}
			row[c.json] = figure
			if c.ratio && base >= 0 {
				ratios[c.json] = ratio
			}
		}
		if len(ratios) > 0 {
			row["ratios"] = ratios
		}
		out[i] = row
	}
	return out
}

// waiterRows are scenario 4's rows.
func waiterRows(ids []string, trials [][]waiterTrial, base int) []jsonRow {
	out := make([]jsonRow, len(ids))
	for i, id := range ids {
		s := summarizeWaiter(trials, i, base)
		out[i] = jsonRow{
			"impl": id, "passed_over_p50": s.passedP50, "passed_over_p90": s.passedP90, "passed_over_max": s.passedMax,
			"trials": s.trials, "trials_never_passed": s.never, "trials_capped": s.capped, "trials_stalled": s.stalled,
			"wait_p50_us": microseconds(s.waitP50), "wait_p90_us": microseconds(s.waitP90), "wait_max_us": microseconds(s.waitMax),
		}
		if base >= 0 {
			out[i]["ratios"] = map[string]float64{"wait_us": s.waitRatio}
		}
	}
	return out
}

// serverCostRows are scenario 5's rows: each group's commands per
// acquisition, for the groups that acquired.
func serverCostRows(ids []string, cmds []cmdstats.Stats, acquisitions []int64) []jsonRow {
	out := []jsonRow{}
	for i, id := range ids {
		n := acquisitions[i]
		if n == 0 {
			continue
		}
		per := map[string]float64{}
		for name, c := range cmds[i] {
			per[name] = float64(c.Calls) / float64(n)
		}
		out = append(out, jsonRow{"impl": id, "commands_per_acq": per})
	}
	return out
}
