package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"
)

// runOnServer runs s's scenarios on its server, in order, and writes a
// section of the report with a table for each as soon as it is done.
func runOnServer(ctx context.Context, c config, s serverSpec, all []impl, prefix string, stdout, stderr io.Writer) (err error) {
	addr, stop, err := s.start()
	if err != nil {
		return err
	}
	defer stop()
	version, pid, err := serverInfo(ctx, addr)
	if err != nil {
		return fmt.Errorf("server %s: %w", addr, err)
	}
	placement := "client and server placed by the kernel"
	if c.pin != nil {
		if err := c.pin.pinServer(pid); err != nil {
			return err
		}
		placement = c.pin.String()
	}
	fmt.Fprintf(stderr, "on %s (%s)\n", s.label, version)
	c.json.addServer(s.label, version, placement)
	if _, err := fmt.Fprintf(stdout, "\n## %s\n\nServer: %s; %s.\n", s.label, version, placement); err != nil {
		return err
	}
	p := plotSet{dir: c.plots, slug: s.slug, server: version + ", " + s.slug}
	if s.scenarios[1] || s.scenarios[2] {
		insts, err := openAll(ctx, addr, prefix, all)
		if err != nil {
			return err
		}
		err = runSingles(ctx, c, s, addr, prefix, insts, &p, stdout, stderr)
		if cerr := closeEach(insts); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if s.scenarios[3] {
		if err := runHandoffScenario(ctx, c, s, addr, prefix, all, &p, stdout, stderr); err != nil {
			return err
		}
	}
	if s.scenarios[4] {
		groups, err := openGroups(ctx, addr, prefix, "w", 2, all)
		if err != nil {
			return err
		}
		err = runWaiterScenario(ctx, c, groups, &p, stdout, stderr)
		if cerr := closeEach(groups); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if s.scenarios[7] {
		if err := runLostLeaseScenario(ctx, c, addr, prefix, all, stdout, stderr); err != nil {
			return err
		}
	}
	return p.write()
}

// runSingles runs scenarios 1 and 2, those s selects, on insts.
func runSingles(ctx context.Context, c config, s serverSpec, addr, prefix string, insts []instance, p *plotSet, stdout, stderr io.Writer) error {
	names, floor := namesOf(insts), -1
	base := baselineIndex(names)
	for i, in := range insts {
		if in.floor {
			floor = i
		}
	}
	if s.scenarios[1] {
		admin, err := newGoRedis(ctx, addr)
		if err != nil {
			return err
		}
		defer admin.Close()
		samples, err := runUncontended(ctx, insts, admin, c.rounds, c.ops, stderr)
		if err != nil {
			return err
		}
		rows := summarize(names, samples, base)
		c.json.addScenario("uncontended", uncontendedRows(idsOf(insts), rows, base))
		if err := writeUncontendedTable(stdout, uncontendedIntro, rows, c.rounds, c.ops); err != nil {
			return err
		}
		if err := writeFloorSpread(stdout, samples, floor); err != nil {
			return err
		}
		p.uncontended("uncontended", "Uncontended Lock+Unlock latency", names, samples)
		if err := runModifyScenario(ctx, c, addr, prefix, insts, admin, p, stdout, stderr); err != nil {
			return err
		}
	}
	if s.scenarios[2] {
		samples, err := runThroughput(ctx, insts, c.rounds, c.throughput, stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, `
### Throughput

%d goroutines, each doing Lock+Unlock back to back on a key of its own,
through one instance per implementation, %s per implementation per round,
%d rounds, interleaved. The floor gives each goroutine a bare connection of
its own doing two PINGs per operation. Stalled counts the goroutines whose
Lock, on a key no one held, was still waiting %s after the round's end;
they stop there, and ops/s counts the operations the others completed.

`, throughputWorkers, c.throughput, c.rounds, stallGrace)
		c.json.addScenario("throughput", figuresRows(idsOf(insts), throughputColumns, samples, base))
		if err := writeFiguresTable(stdout, names, throughputColumns, samples, base); err != nil {
			return err
		}
	}
	return nil
}

// runModifyScenario runs scenario 1's read-modify-write rows, keys under
// prefix, on the implementations of insts.
func runModifyScenario(ctx context.Context, c config, addr, prefix string, insts []instance, admin *redis.Client, p *plotSet, stdout, stderr io.Writer) (err error) {
	all := make([]impl, len(insts))
	for i, in := range insts {
		all[i] = in.impl
	}
	rows, err := openModifiers(ctx, addr, prefix, all)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeEach(rows)) }()
	samples, err := runModify(ctx, rows, admin, c.rounds, c.ops, stderr)
	if err != nil {
		return err
	}
	names := namesOf(rows)
	base := baselineIndex(names)
	p.uncontended("modify", "Uncontended read-modify-write latency", names, samples)
	summary := summarize(names, samples, base)
	jsonRows := uncontendedRows(idsOf(rows), summary, base)
	if err := writeUncontendedTable(stdout, modifyIntro, summary, c.rounds, c.ops); err != nil {
		return err
	}
	replays := replayRatios(idsOf(rows), names, samples)
	for _, r := range replays {
		jsonRows[r.modify]["replay_ratios"] = map[string]float64{
			"p50_us": r.ratios.p50Ratio, "p99_us": r.ratios.p99Ratio, "cpu_us_per_op": r.ratios.cpuRatio, "server_cpu_us_per_op": r.ratios.srvRatio,
		}
	}
	c.json.addScenario("read-modify-write", jsonRows)
	return writeReplayRatios(stdout, names, replays)
}

// runHandoffScenario runs scenario 3, and writes scenario 5's breakdown
// of its server commands where s selects it.
func runHandoffScenario(ctx context.Context, c config, s serverSpec, addr, prefix string, all []impl, p *plotSet, stdout, stderr io.Writer) (err error) {
	groups, err := openHandoffGroups(ctx, addr, prefix, all)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeEach(groups)) }()
	admin, err := newGoRedis(ctx, addr)
	if err != nil {
		return err
	}
	defer admin.Close()
	res, err := runHandoff(ctx, groups, admin, c.rounds, c.handoff, c.slowSteps, stderr)
	if err != nil {
		return err
	}
	names := namesOf(groups)
	base := baselineIndex(names)
	fmt.Fprintf(stdout, `
### Hand-off

%d lockers on one key, each an instance of its own, as separate processes
would be; each hold is one INCR through another client. %s per
implementation per round, %d rounds, interleaved. A hand-off runs from a
holder starting its release to another locker's Lock returning; kept is
the share of acquisitions by the locker that had just released. A wait is
a Lock call, and one cut short by the end of the round counts until then.
Jain is Jain's fairness index over the lockers' acquisitions (1: all
equal; 1/%[1]d: one took all). cmds/acq is the server's commands per
acquisition from INFO commandstats, commands inside scripts included, the
INCRs and INFOs not; threaded writes/acq the replies the server's I/O
threads wrote per acquisition, those to the INCRs and INFOs included
(INFO stats). The floor is %[1]d bare sockets taking turns in this
process, in the order they came: each Lock waits for its turn and then
makes one PING round trip, each unlock one more before it passes the
turn. An acquisition costs it the hold and two round trips, and a
hand-off no message: the least a fair lock could cost here, and its
longest wait what this machine's own stalls of a round trip add.

`, handoffLockers, c.handoff, c.rounds)
	c.json.addScenario("hand-off", figuresRows(idsOf(groups), handoffColumns, res.samples, base))
	if err := writeFiguresTable(stdout, names, handoffColumns, res.samples, base); err != nil {
		return err
	}
	p.handoffWaits(names, res)
	if !s.scenarios[5] {
		return nil
	}
	c.json.addScenario("server-cost", serverCostRows(idsOf(groups), res.cmds, res.acquisitions))
	fmt.Fprintf(stdout, `
### Server cost

The commands the server ran per acquisition in the hand-off rounds above,
from INFO commandstats before and after each round, summed over all the
rounds, most first; commands run inside scripts are counted as well as the
scripts.

`)
	return writeHandoffCommands(stdout, names, res)
}

// runWaiterScenario runs scenario 4 on groups of two lockers.
func runWaiterScenario(ctx context.Context, c config, groups []lockerGroup, p *plotSet, stdout, stderr io.Writer) error {
	trials, err := runWaiter(ctx, groups, c.trials, stderr)
	if err != nil {
		return err
	}
	names := namesOf(groups)
	base := baselineIndex(names)
	fmt.Fprintf(stdout, `
### The remote waiter

Two lockers on one key, each an instance of its own. In each of %d
trials, one holds the key while the other calls Lock once; %s later the
holder releases and takes the key back, with nothing in between, until
the waiter has had it or %d times. Passed over counts the holder's
acquisitions between its first release and the waiter's; the wait runs
from that first release to the waiter's Lock returning. A trial stalls
where a Lock, the waiter's or the holder's, was still waiting %s after
the key was freed for it (a lost wake-up); it ends there, is counted
apart and left out of the other columns. The last column is the median
of the per-trial ratios of the wait to baton fast's. Trials are
interleaved.

`, c.trials, waiterSettle, passOverLimit, stallGrace)
	c.json.addScenario("remote-waiter", waiterRows(idsOf(groups), trials, base))
	if err := writeWaiterTable(stdout, names, trials, base); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nTimes passed over: trials with that count.\n\n")
	for i, name := range names {
		fmt.Fprintf(stdout, "- %s: %s\n", name, passedOverCounts(trials, i))
	}
	p.waiter(names, trials)
	return nil
}

// runLostLeaseScenario runs scenario 7 on those of all that can tell a
// holder of a lost lock.
func runLostLeaseScenario(ctx context.Context, c config, addr, prefix string, all []impl, stdout, stderr io.Writer) (err error) {
	groups, err := openWatchers(ctx, addr, prefix, all)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeEach(groups)) }()
	if len(groups) == 0 {
		_, err := fmt.Fprintf(stdout, "\n### Lost lease noticed\n\nNone of the implementations run can tell a holder of a lost lock.\n")
		return err
	}
	admin, err := newGoRedis(ctx, addr)
	if err != nil {
		return err
	}
	defer admin.Close()
	notices, err := runLostLease(ctx, groups, admin, c.losses, stderr)
	if err != nil {
		return err
	}
	names := namesOf(groups)
	base := baselineIndex(names)
	fmt.Fprintf(stdout, `
### Lost lease noticed

How soon a holder hears that another client deleted its lock: baton's
Lease.Context, in each mode, and the context rueidislock's WithContext
returns. In each of %d losses per implementation, one instance takes a
key, asks for the context and waits until the lock is watched: for
baton, until INFO stats shows the server tracking one more key, the
Subscriber's read of the lock's key; rueidislock reads its key in its
acquire script, so its watch is in place when WithContext returns. Then
a plain connection DELs the lock's key, and the notice runs from just
before the DEL to the context's end. Losses run in rounds of %d per
implementation, interleaved. A loss still unheard %s after the DEL is
missed, counted apart and left out of the times. The last column is the
median of the per-loss ratios to baton fast's notice, each round's k-th
loss against baton fast's k-th. Left out: redsync, bsm/redislock and the
go-redis notify locks, which have no way to tell a holder its lock is
gone but their next call on it, and the floor, which is no lock.

`, c.losses, lossesPerRound, lossGrace)
	c.json.addScenario("lost-lease", lossRows(idsOf(groups), notices, base))
	return writeLossTable(stdout, names, notices, base)
}
