package main

import (
	"github.com/batonlock/baton/internal/urltext"

	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/batonlock/baton/internal/cmdstats"
	"github.com/batonlock/baton/internal/latency"
)

// benchResult is what bench reports; with --json, this document.
type benchResult struct {
	Server      string  `json:"server"`
	ServerKind  string  `json:"server_kind"` // as target.kind
	Mode        string  `json:"mode"`
	Op          string  `json:"op"`
	Concurrency int     `json:"concurrency"`
	Keys        int     `json:"keys"`
	KeyPrefix   string  `json:"key_prefix"`
	Duration    float64 `json:"duration_s"` // as asked
	Elapsed     float64 `json:"elapsed_s"`  // until the last operation ended
	// Ops counts acquisitions: Lock+Unlock pairs, or Modify calls.
	Ops       int64           `json:"ops"`
	OpsPerSec float64         `json:"ops_per_sec"`
	Latency   latency.Summary `json:"latency"`
	// Commands is nil where INFO commandstats could not be read;
	// CommandsUnavailable then says why.
	Commands            *benchCommands `json:"commands"`
	CommandsUnavailable string         `json:"commands_unavailable,omitempty"`
	KeysRemoved         int            `json:"keys_removed"`
}

// benchCommands is what the server ran per acquisition, from INFO
// commandstats before and after the run.
type benchCommands struct {
	PerAcquisition        float64 `json:"per_acquisition"`
	ScriptsPerAcquisition float64 `json:"scripts_per_acquisition"`
	Total                 int64   `json:"total"`
	// IncludesScriptCommands is always true: Redis counts the commands
	// that scripts call under their own names (checked on 7.0.15 by
	// package cmdstats's tests), so an EVALSHA that calls GET and DEL
	// is three. Said in the document so that no reader has to guess.
	IncludesScriptCommands bool `json:"includes_script_commands"`
	// ServerWide is always true: other clients' commands count too.
	ServerWide bool               `json:"server_wide"`
	ByCommand  map[string]float64 `json:"per_acquisition_by_command"`
	// names orders ByCommand for the table: most calls first.
	names []string
}

func newBenchResult(c benchConfig, elapsed time.Duration, lat latency.Summary) benchResult {
	r := benchResult{
		Mode: c.mode, Op: c.op, Concurrency: c.concurrency, Keys: c.keys,
		Duration: c.duration.Seconds(), Elapsed: elapsed.Seconds(),
		Ops: lat.Count, Latency: lat,
	}
	if elapsed > 0 {
		r.OpsPerSec = float64(lat.Count) / elapsed.Seconds()
	}
	return r
}

func newBenchCommands(d cmdstats.Stats, ops int64) *benchCommands {
	c := &benchCommands{
		Total: d.Calls(), IncludesScriptCommands: true, ServerWide: true,
		ByCommand: map[string]float64{}, names: d.Names(),
	}
	if ops == 0 {
		return c
	}
	per := func(n int64) float64 { return float64(n) / float64(ops) }
	c.PerAcquisition = per(c.Total)
	c.ScriptsPerAcquisition = per(d.ScriptCalls())
	for name, counters := range d {
		c.ByCommand[name] = per(counters.Calls)
	}
	return c
}

// redactAddr hides a URL's password: what a command prints may be pasted
// anywhere, or end up in a CI log.
func redactAddr(addr string) string { return urltext.Redacted(addr) }

func writeBenchJSON(w io.Writer, r benchResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing the JSON report: %w", err)
	}
	return nil
}

// writeBenchTable writes the run as one row, then the commands per
// acquisition by command.
func writeBenchTable(w io.Writer, r benchResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"mode", "op", "goroutines", "keys", "elapsed", "ops", "ops/s"}
	row := []string{
		r.Mode, r.Op, strconv.Itoa(r.Concurrency), strconv.Itoa(r.Keys),
		strconv.FormatFloat(r.Elapsed, 'f', 2, 64) + "s",
		strconv.FormatInt(r.Ops, 10), strconv.FormatFloat(r.OpsPerSec, 'f', 0, 64),
	}
	for _, c := range r.Latency.Columns() {
		head = append(head, c.Name)
		row = append(row, latency.Format(c.Value))
	}
	head = append(head, "cmds/op")
	if r.Commands != nil {
		row = append(row, strconv.FormatFloat(r.Commands.PerAcquisition, 'f', 2, 64))
	} else {
		row = append(row, "-")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if r.Commands == nil {
		_, err := fmt.Fprintf(w, "\nno commands per acquisition: %s\n", r.CommandsUnavailable)
		return err
	}
	fmt.Fprintf(w, "\nRedis commands per acquisition, from INFO commandstats before and after\n"+
		"(server-wide; the commands that scripts call count too, beside the EVALSHA):\n")
	width := len("total")
	for _, name := range r.Commands.names {
		width = max(width, len(name))
	}
	for _, name := range r.Commands.names {
		fmt.Fprintf(w, "  %-*s %7.2f\n", width, name, r.Commands.ByCommand[name])
	}
	if _, err := fmt.Fprintf(w, "  %-*s %7.2f\n", width, "total", r.Commands.PerAcquisition); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}
