package integration_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
)

var (
	chaosSeed  = flag.Uint64("chaos.seed", 0, "the seed of TestChaos's random choices (default: from the clock, printed)")
	chaosTime  = flag.Duration("chaos.time", 0, "how long TestChaos runs, both modes together (default 60s under -short, 5m otherwise)")
	chaosRound = flag.Int("chaos.round", 0, "the round TestChaos starts at, to rerun a failed round first")
	chaosOn    = flag.Bool("chaos.on", false, "run TestChaos's rounds on after one fails, to see every kind of violation")
)

func chaosDuration() time.Duration {
	switch {
	case *chaosTime > 0:
		return *chaosTime
	case testing.Short():
		return time.Minute
	}
	return 5 * time.Minute
}

// chaosKeys is how many locks a round's actors share.
const chaosKeys = 3

// chaosKinds are the actors a round picks from: Lockers whose leaked
// locks outlast the round (TTL longTTL) and Lockers whose locks expire
// while held (a short TTL), each with no Manager, a Manager, or a Manager
// that holds locks between calls.
var chaosKinds = []chaosActor{
	{TTL: longTTL, Manager: true, Hold: 1},
	{TTL: 300 * time.Millisecond},
	{TTL: longTTL, Manager: true},
	{TTL: longTTL},
	{TTL: 300 * time.Millisecond, Manager: true, Hold: 1},
	{TTL: 300 * time.Millisecond, Manager: true},
}

// TestChaos is the randomized, model-checked stress test: in each mode,
// round after round, four actors (two in this process, one in each of two
// worker processes), each a Locker of a random kind (chaosKinds) with
// three goroutines, make random calls on three shared locks (chaos_ops:
// Lock and TryLock with very short and cancelled contexts, a random
// sequence of Extend, Unlock and looks at Done, or at the lease's Context,
// on each lease, Modify with fn that succeeds, fails, panics, cancels or
// outlives the TTL, Close and a new Locker), while random faults strike
// the server (chaos_faults), among them another client's DEL or SET of a
// held lock (faulter.loseLock), which requires a password (chaosPassword)
// and which the Lockers reach through a fault proxy. After each round
// every Locker has closed; the server must hold no lock and no queue,
// every key must have a TTL, no text of the round may say the password
// (checkSecrets), and the history must pass every check of checkChaos. A
// failure prints the seed, the history around each violation, and the
// command that runs the failed round again. Each round, and each mode at
// its end, logs how long the leases whose locks were deleted or
// overwritten took to hear of it (lossStats).
func TestChaos(t *testing.T) {
	chaosBothModes(t, 0, func(t *testing.T, b *backend) chaosTarget {
		return serverTarget(t, b.start(t, spec{}))
	})
}

// TestChaosOnACluster is TestChaos on a Redis Cluster of three primaries,
// each with a replica, whose nodes require a password where they are
// processes, and whose faults add, to those of one server (each on a node
// picked at random, reached with no proxy between; lose-lock on the node
// of the lock it strikes), a reshard of a round key's slot that leaves it
// open up to 1.5s, and a failover of a round key's primary. Its Lockers
// acknowledge every write on a replica (WithReplicaAck), so that a
// failover loses nothing and every check holds. It runs in make
// integration, not under -short.
func TestChaosOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("make integration runs it")
	}
	chaosBothModes(t, 2, func(t *testing.T, b *backend) chaosTarget {
		if !b.process {
			// redisproc's tools for a cluster of containers (its
			// readiness check among them) know no password yet.
			t.Log("a cluster of containers: its nodes require no password")
			return clusterTarget(t, b.startCluster(t, 3, 1), "")
		}
		pass := chaosPassword()
		// redisproc gives the replicas the password too (masterauth).
		return clusterTarget(t, startProcessCluster(t, 3, 1, redistest.WithConfig("requirepass "+pass)), pass)
	})
}

// chaosBothModes runs a checker's rounds in fast mode, then in fair, on a
// target that start makes on each backend, each with half the time. The
// variants are firstVariant and the one after it: they name the rounds'
// keys, and pick their seeds.
func chaosBothModes(t *testing.T, firstVariant uint64, start func(t *testing.T, b *backend) chaosTarget) {
	seed := *chaosSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	total := chaosDuration()
	t.Logf("chaos: seed %d, %v in all", seed, total)
	forEachBackend(t, func(t *testing.T, b *backend) {
		for vi, fair := range []bool{false, true} {
			name := "fast"
			if fair {
				name = "fair"
			}
			t.Run(name, func(t *testing.T) {
				run := chaosRun{seed: seed, variant: firstVariant + uint64(vi), fair: fair, budget: total / 2, total: total}
				chaosVariant(t, start(t, b), run)
			})
		}
	})
}

// chaosRun is one variant of TestChaos: a mode, its share of the time.
type chaosRun struct {
	seed    uint64
	variant uint64
	fair    bool
	budget  time.Duration
	total   time.Duration // for the rerun command
}

func chaosVariant(t *testing.T, target chaosTarget, run chaosRun) {
	began := time.Now()
	end := began.Add(run.budget)
	rounds := 0
	var loss lossStats // of every round
	defer func() { t.Logf("chaos: lose-lock faults, %d rounds: %v", rounds, loss) }()
	for r := *chaosRound; ; r++ {
		plan := chaosRoundPlan(run, r)
		if rounds > 0 && time.Until(end) < plan.length+3*time.Second {
			break
		}
		rounds++
		if !chaosRound1(t, target, run, r, plan, &loss) {
			t.Errorf("chaos: seed %d, round %d failed, %v after the first round began; run it again with:\n  %s",
				run.seed, r, time.Since(began).Round(time.Second), rerunCommand(t, run, r))
			if !*chaosOn {
				return
			}
		}
	}
	if !t.Failed() {
		t.Logf("chaos: %d rounds passed", rounds)
	}
}

// roundPlan is what one round does, chosen from the seed alone.
type roundPlan struct {
	length time.Duration
	actors []chaosActor // the first two in this process, then one per worker
}

func chaosRoundPlan(run chaosRun, round int) roundPlan {
	rng := newRand(run.seed, run.variant, uint64(round))
	p := roundPlan{length: time.Duration(4000+rng.IntN(3000)) * time.Millisecond}
	if !testing.Short() {
		p.length *= 2
	}
	for i, k := range rng.Perm(len(chaosKinds))[:4] {
		a := chaosKinds[k]
		a.Name, a.Goroutines = fmt.Sprintf("a%d", i), 3
		a.StateTTL = pick(rng, weighted[time.Duration]{3, time.Hour}, weighted[time.Duration]{1, time.Duration(math.MaxInt64)})
		if a.Hold > 0 {
			a.Hold = pick(rng, weighted[time.Duration]{1, 20 * time.Millisecond}, weighted[time.Duration]{1, 100 * time.Millisecond}, weighted[time.Duration]{1, time.Second})
		}
		p.actors = append(p.actors, a)
	}
	return p
}

// chaosRound1 runs one round and checks it, logging what it found, and
// adding what its lose-lock faults did to loss; it reports whether the
// round passed.
func chaosRound1(t *testing.T, target chaosTarget, run chaosRun, round int, plan roundPlan, loss *lossStats) bool {
	dir := t.TempDir()
	prefix := fmt.Sprintf("chaos%d-r%d-", run.variant, round)
	var keys []string
	for i := range chaosKeys {
		keys = append(keys, fmt.Sprintf("%sk%d", prefix, i))
	}
	until := time.Now().Add(plan.length)
	// The wall clock less the shared clock, to date fencing tokens.
	wallOffset := time.Now().UnixNano() - now()
	procPlan := func(proc string, actors []chaosActor, i uint64) chaosPlan {
		return chaosPlan{Addr: target.addr, Admin: target.admin, Pass: target.pass, Secrets: target.secrets,
			Acks: target.acks, ReleaseTimeout: target.releaseTimeout, Fair: run.fair, Keys: keys, Actors: actors,
			Seed: seedFor(run.seed, run.variant, uint64(round), i), Until: until.UnixNano(), Dir: dir, Proc: proc}
	}
	forms := newSecretForms(target.secrets...)
	t.Logf("round %d: %v, actors %v", round, plan.length, plan.actors)
	var workers []*worker
	outputs := map[string]string{} // each worker's stdout and stderr, by process, to be checked
	for i, a := range plan.actors[2:] {
		p := procPlan(fmt.Sprintf("w%d", i+1), []chaosActor{a}, uint64(i+1))
		outputs[p.Proc] = filepath.Join(dir, p.Proc+".out")
		out, err := os.Create(outputs[p.Proc])
		require.NoError(t, err)
		t.Cleanup(func() { _ = out.Close() })
		workers = append(workers, startWorkerTo(t, job{Do: "chaos", Chaos: &p}, out, redactingWriter{os.Stderr, forms}))
	}
	faultRec, err := newChaosRecorder(dir, "faults")
	require.NoError(t, err)
	ctx := context.Background()
	p, err := startChaosProc(ctx, procPlan("test", plan.actors[:2], 0))
	require.NoError(t, err) // redacted
	runCtx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- p.run(runCtx) }()

	stopWatch := target.startWatch(faultRec)
	defer stopWatch()
	f := &faulter{t: t, target: target, keys: keys, rng: newRand(run.seed, run.variant, uint64(round), 99), rec: faultRec}
	f.run(until)
	stopWatch()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(2 * time.Minute):
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatalf("round %d: the actors did not stop within 2 minutes of the round's end", round)
	}
	for _, w := range workers {
		require.NoError(t, w.wait(2*time.Minute))
	}
	for _, node := range target.nodes() {
		_, _ = target.do(node, "CLIENT", "UNPAUSE")
	}
	require.NoError(t, faultRec.close())

	leftovers := serverLeftovers(target, keys, run.fair)
	reads := readChaosCounts(t, target, keys)
	recs, err := readChaosHistory(dir)
	require.NoError(t, err)
	// First, so that every text the other checks and the report quote
	// is redacted.
	leaks, scanned := checkSecrets(recs, outputs, forms)
	v := checkChaos(recs, reads, p.plan.releaseBound())
	v.findings, v.scanned = append(leaks, v.findings...), scanned
	loss.add(v.loss)
	for _, f := range leftovers {
		// Show what happened on the key last, or, for a lock left held,
		// around the grant of the fencing token it was left with: a
		// known lease's, or that of a grant nobody heard of, which the
		// token, the server's clock in microseconds then, dates.
		for _, r := range recs {
			if r.Key == f.key {
				f.at = max(f.at, r.Call)
			}
		}
		if f.fence != 0 {
			f.at = int64(f.fence)*1000 - wallOffset
			for _, r := range recs {
				if r.Key == f.key && r.Fence == f.fence && (r.Kind == recLock || r.Kind == recTryLock) {
					// And the calls of its Locker, its Close among them.
					f.at, f.ids, f.actor = r.Ret, []string{r.ID}, r.Actor
					f.what += ", the fencing token of lease " + r.ID
				}
			}
		}
		v.findings = append(v.findings, f)
	}
	t.Logf("round %d: %v", round, v)
	if len(v.findings) == 0 {
		return true
	}
	t.Logf("round %d: %d violations %v; seed %d", round, len(v.findings), v.kinds(), run.seed)
	// The first two of each kind.
	shown := map[string]int{}
	for _, finding := range v.findings {
		if shown[finding.kind]++; shown[finding.kind] <= 2 {
			t.Log(v.explain(finding, recs))
		}
	}
	t.Log(roundState(target, keys, recs))
	return false
}

// roundState describes, for a failed round, what the history's excerpts
// around each finding leave out: every fault of the round with when it
// began and ended, what each live node holds of the round's locks (the
// milliseconds each has left, -2 for none), and what the target says of
// itself (which primary each sentinel names).
func roundState(target chaosTarget, keys []string, recs []chaosRecord) string {
	var b strings.Builder
	b.WriteString("the round's faults (ms since it began):\n")
	for _, r := range recs {
		if r.Kind == recFault {
			fmt.Fprintf(&b, "    %9.3f .. %9.3f  %s %s\n", float64(r.Call-recs[0].Call)/1e6, float64(r.Ret-recs[0].Call)/1e6, r.Note, r.Err)
		}
	}
	b.WriteString("the nodes now:\n")
	for _, n := range target.nodes() {
		fmt.Fprintf(&b, "    %s", n)
		if role, err := target.do(n, "ROLE"); err == nil && len(role.Elems) > 0 {
			fmt.Fprintf(&b, " %s", role.Elems[0].Str)
		}
		for _, k := range keys {
			if v, err := target.do(n, "PTTL", "baton:{"+k+"}"); err == nil {
				fmt.Fprintf(&b, " %s=%d", k, v.Int)
			}
		}
		b.WriteString("\n")
	}
	if target.describe != nil {
		b.WriteString(target.describe())
	}
	return b.String()
}

// serverLeftovers checks the server once every Locker of a round has
// closed: no lock may be held a moment later (a lock handed to a waiter
// that gave up is held for the hand-off window, 500ms, at most), no fair
// queue may be left once a queue lease (3s) has passed, and every key
// must have a TTL.
func serverLeftovers(target chaosTarget, keys []string, fair bool) []chaosFinding {
	at, doAt := target.at, target.do
	var found []chaosFinding
	wait := func(d time.Duration, gone func() bool) bool {
		deadline := time.Now().Add(d)
		for !gone() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
		return true
	}
	for _, key := range keys {
		lockKey := "baton:{" + key + "}"
		if !wait(1500*time.Millisecond, func() bool { v, err := doAt(at(key), "EXISTS", lockKey); return err == nil && v.Int == 0 }) {
			ttl, _ := doAt(at(key), "PTTL", lockKey)
			fence, _ := doAt(at(key), "GET", lockKey+":fence")
			f := chaosFinding{kind: findLeftHeld, key: key, what: fmt.Sprintf(
				"%s is still held 1.5s after every Locker's Close returned, for %dms more (fence %s)", lockKey, ttl.Int, fence.Str)}
			f.fence, _ = strconv.ParseUint(fence.Str, 10, 64)
			found = append(found, f)
		}
		if fair && !wait(5*time.Second, func() bool {
			v, err := doAt(at(key), "EXISTS", lockKey+":queue", lockKey+":waiters")
			return err == nil && v.Int == 0
		}) {
			q, _ := doAt(at(key), "ZCARD", lockKey+":queue")
			w, _ := doAt(at(key), "HLEN", lockKey+":waiters")
			found = append(found, chaosFinding{kind: findQueueLeft, key: key, what: fmt.Sprintf(
				"%s's queue is still there 5s after every Locker's Close returned: %d queued, %d waiters", lockKey, q.Int, w.Int)})
		}
	}
	for _, key := range keys {
		v, err := doAt(at(key), "KEYS", "baton:{"+key+"}*")
		if err != nil {
			continue
		}
		for _, k := range v.Elems {
			if ttl, err := doAt(at(key), "PTTL", k.Str); err == nil && ttl.Int == -1 {
				found = append(found, chaosFinding{kind: findNoTTL, key: key, what: fmt.Sprintf("%s has no TTL", k.Str)})
			}
		}
	}
	return found
}

// readChaosCounts reads every key's count once the round is over.
func readChaosCounts(t *testing.T, target chaosTarget, keys []string) []modifyOp {
	var reads []modifyOp
	for _, key := range keys {
		call := now()
		v, err := target.do(target.at(key), "GET", "baton:{"+key+"}:state")
		require.NoError(t, err)
		ret := now()
		var c counter
		if !v.IsNull() {
			require.NoError(t, json.Unmarshal([]byte(v.Str), &c), "state of %s: %q", key, v.Str)
		}
		reads = append(reads, modifyOp{id: "read " + key, token: key, call: call, ret: ret, old: c.N})
	}
	return reads
}

// rerunCommand is the command that runs round of run again, first.
func rerunCommand(t *testing.T, run chaosRun, round int) string {
	var env []string
	for _, name := range []string{processEnv, imageEnv, imagesEnv} {
		if v := os.Getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	short := ""
	if testing.Short() {
		short = " -short"
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + p + "$"
	}
	cmd := fmt.Sprintf("go test -race -count=1%s -run '%s' ./integration -args -chaos.seed=%d -chaos.time=%v -chaos.round=%d",
		short, strings.Join(parts, "/"), run.seed, run.total, round)
	if len(env) > 0 {
		cmd = strings.Join(env, " ") + " " + cmd
	}
	return cmd
}

// runChaosWorker is a worker process's part of a round (job "chaos").
func runChaosWorker(t *testing.T, plan chaosPlan) {
	ctx := context.Background()
	p, err := startChaosProc(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	runCtx, cancel := context.WithDeadline(ctx, time.Unix(0, plan.Until))
	defer cancel()
	if err := p.run(runCtx); err != nil {
		t.Fatal(err)
	}
}
