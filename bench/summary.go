package main

import (
	"slices"
	"time"
)

// row is one implementation's line of the uncontended table: medians over
// rounds, and medians of the per-round ratios to the baseline.
type row struct {
	name                                   string
	p50, p99, cpu, serverCPU               time.Duration
	p50Ratio, p99Ratio, cpuRatio, srvRatio float64
	cmds                                   float64 // server commands per operation
}

// summarize turns samples[round][instance] into a row per instance. base
// is the baseline's index, or -1 for no ratios; each ratio is taken
// within its round, where both ran under the same conditions of the
// machine.
func summarize(names []string, samples [][]sample, base int) []row {
	rows := make([]row, len(names))
	for i, name := range names {
		var p50, p99, cpu, srv, r50, r99, rcpu, rsrv, cmds []float64
		for _, round := range samples {
			s, b := round[i], sample{}
			if base >= 0 {
				b = round[base]
			}
			p50 = append(p50, float64(s.lat.P50))
			p99 = append(p99, float64(s.lat.P99))
			cpu = append(cpu, float64(s.cpuPerOp))
			r50 = append(r50, ratio(s.lat.P50, b.lat.P50))
			r99 = append(r99, ratio(s.lat.P99, b.lat.P99))
			rcpu = append(rcpu, ratio(s.cpuPerOp, b.cpuPerOp))
			cmds = append(cmds, s.cmdsPerOp)
			srv = append(srv, float64(s.serverCPUPerOp))
			rsrv = append(rsrv, ratio(s.serverCPUPerOp, b.serverCPUPerOp))
		}
		rows[i] = row{
			name: name,
			p50:  time.Duration(median(p50)), p99: time.Duration(median(p99)), cpu: time.Duration(median(cpu)),
			p50Ratio: median(r50), p99Ratio: median(r99), cpuRatio: median(rcpu),
			serverCPU: time.Duration(median(srv)), srvRatio: median(rsrv),
			cmds: median(cmds),
		}
	}
	return rows
}

// ratio is a/b, or 0 where b is 0 (a CPU time below getrusage's
// resolution): no ratio rather than an infinite one.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// median of xs, the mean of the middle two for an even count; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
