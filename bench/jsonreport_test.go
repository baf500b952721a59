package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTheJSONReportsShape runs every scenario that runs on one server
// with --json and checks the document: the run's description, one
// server, the scenarios in order, and in each a row per implementation
// with exactly the scenario's figures, ratios to baton fast included.
// The markdown report goes to stderr.
func TestTheJSONReportsShape(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"--json", "--addr", addr, "--impls", "baton-fast,baton-fair,redislock,floor",
		"--rounds", "1", "--ops", "5", "--trials", "1", "--losses", "2", "--throughput-duration", "50ms", "--handoff-duration", "100ms"},
		&stdout, &stderr)
	require.NoError(t, err, stderr.String())
	require.Contains(t, stderr.String(), "### Uncontended Lock+Unlock", "the markdown report goes to stderr")

	var doc struct {
		Command, Date, Machine string
		Servers                []struct {
			Label, Version, Placement string
			Scenarios                 []struct {
				Scenario string
				Rows     []map[string]json.RawMessage
			}
		}
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), "one JSON document on stdout")
	require.False(t, dec.More(), "nothing after the document")
	require.True(t, strings.HasPrefix(doc.Command, "go run . --json --addr "), doc.Command)
	_, err = time.Parse(time.RFC3339, doc.Date)
	require.NoError(t, err)
	require.Contains(t, doc.Machine, "cores")
	require.Len(t, doc.Servers, 1)
	srv := doc.Servers[0]
	require.True(t, strings.HasPrefix(srv.Version, "redis "), srv.Version)
	require.NotEmpty(t, srv.Label)
	require.NotEmpty(t, srv.Placement)

	locks := []string{"baton-fast", "baton-fair", "redislock"}
	everyImpl := append(slices.Clone(locks), "floor")
	want := []struct {
		scenario string
		impls    []string
		figures  []string
		ratios   []string
	}{
		{"uncontended", everyImpl, []string{"p50_us", "p99_us", "cpu_us_per_op", "server_cpu_us_per_op", "cmds_per_op"},
			[]string{"p50_us", "p99_us", "cpu_us_per_op", "server_cpu_us_per_op"}},
		{"read-modify-write", []string{"baton-fast", "baton-fast+manager", "baton-fast+manager-replay", "baton-fair", "baton-fair+manager",
			"baton-fair+manager-replay", "redislock", "floor"},
			[]string{"p50_us", "p99_us", "cpu_us_per_op", "server_cpu_us_per_op", "cmds_per_op"},
			[]string{"p50_us", "p99_us", "cpu_us_per_op", "server_cpu_us_per_op"}},
		{"throughput", everyImpl, []string{"ops_per_s", "stalled"}, []string{"ops_per_s"}},
		{"hand-off", everyImpl, []string{"acq_per_s", "handoff_p50_us", "handoff_p99_us", "kept", "wait_p99_us", "wait_max_us",
			"jain", "cmds_per_acq", "threaded_writes_per_acq"},
			[]string{"acq_per_s", "handoff_p50_us", "handoff_p99_us", "wait_p99_us", "wait_max_us", "cmds_per_acq"}},
		{"server-cost", everyImpl, []string{"commands_per_acq"}, nil},
		{"remote-waiter", locks, []string{"passed_over_p50", "passed_over_p90", "passed_over_max", "trials", "trials_never_passed",
			"trials_capped", "trials_stalled", "wait_p50_us", "wait_p90_us", "wait_max_us"}, []string{"wait_us"}},
		{"lost-lease", []string{"baton-fast", "baton-fair"}, []string{"losses", "missed", "notice_p50_us", "notice_p99_us", "notice_max_us"},
			[]string{"notice_us"}},
	}
	require.Len(t, srv.Scenarios, len(want))
	for i, w := range want {
		got := srv.Scenarios[i]
		require.Equal(t, w.scenario, got.Scenario)
		var impls []string
		for _, row := range got.Rows {
			var impl string
			require.NoError(t, json.Unmarshal(row["impl"], &impl))
			impls = append(impls, impl)
			keys := append([]string{"impl"}, w.figures...)
			if w.ratios != nil {
				keys = append(keys, "ratios")
				var ratios map[string]float64
				require.NoError(t, json.Unmarshal(row["ratios"], &ratios), "%s %s", w.scenario, impl)
				require.ElementsMatch(t, w.ratios, slices.Collect(maps.Keys(ratios)), "%s %s", w.scenario, impl)
				if impl == "baton-fast" && w.scenario != "remote-waiter" {
					for name, r := range ratios {
						require.InDelta(t, 1, r, 1e-9, "%s: baton fast's %s to itself", w.scenario, name)
					}
				}
			}
			if strings.HasSuffix(impl, "+manager") {
				// A manager row has its ratios to its replay too.
				keys = append(keys, "replay_ratios")
				var ratios map[string]float64
				require.NoError(t, json.Unmarshal(row["replay_ratios"], &ratios), impl)
				require.ElementsMatch(t, w.ratios, slices.Collect(maps.Keys(ratios)), impl)
				for name, r := range ratios {
					require.Positive(t, r, "%s: %s to its replay", impl, name)
				}
			}
			require.ElementsMatch(t, keys, slices.Collect(maps.Keys(row)), "%s %s", w.scenario, impl)
			for _, f := range w.figures {
				if f == "commands_per_acq" {
					var per map[string]float64
					require.NoError(t, json.Unmarshal(row[f], &per), "%s %s", w.scenario, impl)
					continue
				}
				var x float64
				require.NoError(t, json.Unmarshal(row[f], &x), "%s %s %s: a number", w.scenario, impl, f)
				require.GreaterOrEqual(t, x, 0.0, "%s %s %s", w.scenario, impl, f)
			}
		}
		require.Equal(t, w.impls, impls, w.scenario)
	}
}
