package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/schollz/progressbar/v3"

	"github.com/batonlock/baton/internal/scenario"
)

func init() {
	register("demo", "the scenario that started baton: a remote waiter against back-to-back modifications", runDemo)
}

const demoAbout = `Instance A modifies a token 1000 times back to back; instance B, with its
own connections, modifies it once after A's 10th. Each configuration runs
--runs times; the table shows how often A's modifications passed B, B's
wait, what an uncontended Modify costs, and whether every count was exact.

Without --addr the demo starts a throwaway redis-server from PATH, else a
container from a local image when Docker answers (BATON_REDIS_IMAGE names
it; nothing is pulled), else a server embedded in the process, where only
the fair rows can run. Keys it writes are deleted afterwards.`

// demoIterations is how many modifications A makes: the scenario's 1000.
const demoIterations = 1000

// demoReport is the demo's result, as --json prints it.
type demoReport struct {
	Server     demoServer `json:"server"`
	Counting   string     `json:"counting"`
	Runs       int        `json:"runs"`
	Iterations int        `json:"iterations"`
	Rows       []demoRow  `json:"rows"`
	Skipped    []string   `json:"skipped,omitempty"`
	SkipReason string     `json:"skip_reason,omitempty"`
	Summary    string     `json:"summary"`
}

type demoServer struct {
	Kind  string `json:"kind"`
	Addr  string `json:"addr"`
	About string `json:"about"`
}

func runDemo(ctx context.Context, args []string, out outputs) error {
	fs := newFlags("demo", "[flags]", demoAbout, out)
	addr := fs.String("addr", "", addrFlagHelp+" (default: a throwaway server)")
	runs := fs.Int("runs", 10, "runs of each configuration")
	asJSON := fs.Bool("json", false, "print the figures as one JSON document on stdout")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(rest); err != nil {
		return err
	}
	if *runs < 1 {
		return usagef("--runs %d: want at least 1", *runs)
	}

	t, err := findTarget(ctx, *addr, out.stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	t.announce(out, *asJSON)

	counting, restore, err := scenario.PrepareCounting(ctx, t.addr)
	if err != nil {
		return fmt.Errorf("server %s: %w", redactAddr(t.addr), err)
	}
	defer restore()

	report := demoReport{
		Server:   demoServer{Kind: t.kind, Addr: t.addr, About: t.about},
		Counting: string(counting),
		Runs:     *runs,
	}
	var configs []scenario.Config
	for _, cfg := range scenario.Configs {
		if cfg.NeedsNotifications() && !t.notifications {
			report.Skipped = append(report.Skipped, cfg.Name)
			continue
		}
		configs = append(configs, cfg)
	}
	if len(report.Skipped) > 0 {
		report.SkipReason = "this server publishes no keyspace notifications, which their waiters listen to"
	}

	settings := scenario.Settings{Addr: t.addr, Counting: counting, Prefix: "baton:demo:", Iterations: demoIterations}
	report.Iterations = demoIterations
	bar := newProgress(len(configs)**runs*settings.Steps(), out)
	settings.Progress = func() { _ = bar.Add(1) }
	for _, cfg := range configs {
		bar.Describe(cfg.Name)
		results := make([]scenario.Result, 0, *runs)
		for range *runs {
			res, err := scenario.Run(ctx, settings, cfg)
			if err != nil {
				_ = bar.Clear()
				return fmt.Errorf("server %s: %s: %w", redactAddr(t.addr), cfg.Name, err)
			}
			results = append(results, res)
		}
		report.Rows = append(report.Rows, summarize(cfg, results))
	}
	_ = bar.Finish()
	_ = bar.Clear()
	report.Summary = demoSummary(report.Rows, counting)

	if *asJSON {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	printDemoTable(out.stdout, report)
	return nil
}

// newProgress draws a bar on stderr when it is a terminal.
func newProgress(total int, out outputs) *progressbar.ProgressBar {
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(out.stderr),
		progressbar.OptionSetVisibility(isTerminal(out.stderr)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish(),
	)
}
