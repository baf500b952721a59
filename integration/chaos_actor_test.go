package integration_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/batonlock/baton/internal/redisproc"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
	"github.com/batonlock/baton/observe"
)

// chaosPlan is what one process of a chaos round runs: its actors on the
// round's keys, from its seed, until Until (wall clock, ns), recording to
// Dir/Proc.chaos. The test's own process and each worker get one.
type chaosPlan struct {
	Addr string `json:"addr"`
	// Admin is the server a Modify's fn puts out of memory (fn variant
	// "oom"), as the user Pass names; "" where the actors cannot tell
	// which node holds a key (a cluster, sentinels), and fn skips it.
	Admin string `json:"admin,omitempty"`
	Pass  string `json:"pass,omitempty"`
	// Secrets are the passwords no text of the process may say (see
	// leakScan): the servers', the sentinels'.
	Secrets []string `json:"secrets,omitempty"`
	Acks    int      `json:"acks"` // WithReplicaAck(Acks, ackTimeout) unless 0: a failover loses nothing
	// ReleaseTimeout is the Lockers' WithReleaseTimeout, or 0 for lock's
	// default (releaseTimeout).
	ReleaseTimeout time.Duration `json:"release_timeout"`
	Fair           bool          `json:"fair"`
	Keys           []string      `json:"keys"`
	Actors         []chaosActor  `json:"actors"`
	Seed           uint64        `json:"seed"`
	Until          int64         `json:"until"`
	Dir            string        `json:"dir"`
	Proc           string        `json:"proc"`
}

// chaosActor is one service instance: a Locker with TTL, and, with
// Manager, a Manager on it (holding locks for Hold between calls, if
// set), whose Goroutines run random calls. A Close at a random moment
// replaces its Locker (and Manager) with a new generation.
type chaosActor struct {
	Name    string        `json:"name"`
	TTL     time.Duration `json:"ttl"`
	Manager bool          `json:"manager"`
	Hold    time.Duration `json:"hold"`
	// StateTTL is the Manager's state TTL (manager.WithStateTTL); one
	// too long to be sent in milliseconds makes every write-back fail,
	// or every call refused, and either way no lock may stay held.
	StateTTL   time.Duration `json:"state_ttl"`
	Goroutines int           `json:"goroutines"`
}

func (a chaosActor) String() string {
	s := fmt.Sprintf("%s(ttl %v", a.Name, a.TTL)
	switch {
	case a.Hold > 0:
		s += fmt.Sprintf(", manager, hold %v", a.Hold)
	case a.Manager:
		s += ", manager"
	}
	if a.StateTTL != time.Hour && a.Manager {
		s += fmt.Sprintf(", state TTL %v", a.StateTTL)
	}
	return s + ")"
}

// releaseTimeout is lock's default release timeout, which bounds an
// Unlock whatever its context, and each half of a Close (see their docs).
const releaseTimeout = 5 * time.Second

// releaseBound is the release timeout of p's Lockers.
func (p chaosPlan) releaseBound() time.Duration {
	if p.ReleaseTimeout > 0 {
		return p.ReleaseTimeout
	}
	return releaseTimeout
}

// longTTL is the TTL of the actors whose leaked locks the checks must
// still find held: long enough to outlast a round.
const longTTL = 30 * time.Second

// chaosProc is one process's part of a round.
type chaosProc struct {
	plan chaosPlan
	rec  *chaosRecorder
	// scan reads every error, event and log record of the process for
	// the plan's secrets.
	scan *leakScan
	// inspector looks at locks for the checks (Inspect), apart from
	// every actor; it makes no other call.
	inspector *lock.Locker
	actors    []*actor
	// stopWatch ends the lease watchers and the pending checks once
	// every generation has closed.
	stopWatch chan struct{}
	checks    sync.WaitGroup // the pending checks that a lock was let go
}

// actor is a chaosActor running.
type actor struct {
	p    *chaosProc
	spec chaosActor
	name string // <proc>.<actor>

	mu   sync.Mutex  // guards gen and gens
	gen  *generation // the current generation; nil while none is open
	gens int

	reopen   sync.Mutex     // one Close-and-reopen at a time
	watchers sync.WaitGroup // lease watchers; they end with stopWatch at the latest
}

// generation is one Locker of an actor, with its Manager.
type generation struct {
	id      string // <proc>.<actor>#<n>
	locker  *lock.Locker
	manager *manager.Manager[counter] // nil for an actor without one
	obs     *genObserver

	mu       sync.Mutex // guards inflight
	inflight map[*opCtx]struct{}
}

func (g *generation) list(o *opCtx) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight[o] = struct{}{}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.inflight, o)
	}
}

// cancelInflight cancels every call in flight on g.
func (g *generation) cancelInflight() {
	g.mu.Lock()
	calls := make([]*opCtx, 0, len(g.inflight))
	for o := range g.inflight {
		calls = append(calls, o)
	}
	g.mu.Unlock()
	for _, o := range calls {
		o.cancelNow()
	}
}

// seedFor derives the seed of one part of a run from the run's seed and
// the part's path (variant, round, process, actor, goroutine), so that
// each part's choices depend on the run's seed alone.
func seedFor(seed uint64, path ...uint64) uint64 {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, p := range path {
		h ^= p + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		// splitmix64's finalizer
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

func newRand(seed uint64, path ...uint64) *rand.Rand {
	s := seedFor(seed, path...)
	return rand.New(rand.NewPCG(s, s^0xda3e39cb94b95bdb))
}

// startChaosProc opens the process's inspector and every actor's first
// generation.
func startChaosProc(ctx context.Context, plan chaosPlan) (*chaosProc, error) {
	rec, err := newChaosRecorder(plan.Dir, plan.Proc)
	if err != nil {
		return nil, err
	}
	p := &chaosProc{plan: plan, rec: rec, scan: &leakScan{forms: newSecretForms(plan.Secrets...), rec: rec}, stopWatch: make(chan struct{})}
	p.inspector, err = lock.Open(ctx, plan.Addr, p.lockOptions(time.Second, p)...)
	if err != nil {
		p.scan.err("the inspector's Open", err)
		p.scan.recordCounts()
		rec.close()
		return nil, errors.New(p.scan.forms.redact(err.Error()))
	}
	for _, spec := range plan.Actors {
		a := &actor{p: p, spec: spec, name: plan.Proc + "." + spec.Name}
		g, err := a.open(ctx)
		if err != nil {
			p.abandon()
			return nil, errors.New(p.scan.forms.redact(err.Error()))
		}
		a.gen = g
		p.actors = append(p.actors, a)
	}
	return p, nil
}

// lockOptions are the options of every Locker of the process: ttl, the
// plan's, obs as observer (the process, or a generation's observer that
// passes every event on to it), and the process's scan as log, at every
// level.
func (p *chaosProc) lockOptions(ttl time.Duration, obs observe.Observer) []lock.Option {
	logger := slog.New(slog.NewJSONHandler(p.scan, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := []lock.Option{lock.WithTTL(ttl), lock.WithObserver(obs), lock.WithLogger(logger)}
	if p.plan.Fair {
		opts = append(opts, lock.WithFair())
	}
	if p.plan.Acks > 0 {
		opts = append(opts, lock.WithReplicaAck(p.plan.Acks, ackTimeout))
	}
	if p.plan.ReleaseTimeout > 0 {
		opts = append(opts, lock.WithReleaseTimeout(p.plan.ReleaseTimeout))
	}
	return opts
}

// Observe is the observer of every Locker of the process (through a
// generation's genObserver, but for the inspector's): it has the scan
// read each event, and records each release that failed in the
// background (recEvent), which no caller hears of, for the history a
// lock left held is explained with.
func (p *chaosProc) Observe(e observe.Event) {
	p.scan.Observe(e)
	if e.Kind == observe.ReleaseFailed {
		p.rec.add(chaosRecord{Kind: recEvent, ID: p.rec.newID(p.plan.Proc + ".event"), Key: e.Key, Call: now(), Ret: now(),
			Note: e.Kind.String(), Err: errText(e.Err)})
	}
}

// admin sends one command to the plan's Admin server, if it has one,
// as redisproc.Do, whatever comes of it.
func (p *chaosProc) admin(args ...string) {
	if p.plan.Admin != "" {
		_, _ = redisproc.Do(p.plan.Admin, p.plan.Pass, args...)
	}
}

// abandon closes what startChaosProc opened before it failed.
func (p *chaosProc) abandon() {
	for _, a := range p.actors {
		if a.gen != nil {
			a.closeGen(a.gen, false)
		}
	}
	p.scan.err("the inspector's Close", p.inspector.Close())
	p.scan.recordCounts()
	_ = p.rec.close()
}

// run runs every actor's goroutines until ctx ends, then closes every
// generation, ends the lease watchers and closes the history. It returns
// once everything it started has stopped.
func (p *chaosProc) run(ctx context.Context) error {
	var wg sync.WaitGroup
	for ai, a := range p.actors {
		for gi := range a.spec.Goroutines {
			rng := newRand(p.plan.Seed, uint64(ai), uint64(gi))
			wg.Go(func() { a.loop(ctx, rng, gi) })
		}
	}
	wg.Wait()
	for _, a := range p.actors {
		a.mu.Lock()
		g := a.gen
		a.gen = nil
		a.mu.Unlock()
		if g != nil {
			a.closeGen(g, false)
		}
	}
	// Every lease's Done must be closed by now (Close released them);
	// the watchers see that, and each takes a last look before it goes.
	time.Sleep(200 * time.Millisecond)
	close(p.stopWatch)
	for _, a := range p.actors {
		a.watchers.Wait()
	}
	p.checks.Wait()
	err := p.inspector.Close()
	p.scan.err("the inspector's Close", err)
	p.scan.recordCounts()
	if err != nil {
		err = errors.New(p.scan.forms.redact(err.Error()))
	}
	return errors.Join(err, p.rec.close())
}

// current is the actor's generation now, opening one if there is none.
func (a *actor) current(ctx context.Context) *generation {
	a.mu.Lock()
	g := a.gen
	a.mu.Unlock()
	if g != nil {
		return g
	}
	a.reopen.Lock()
	defer a.reopen.Unlock()
	a.mu.Lock()
	g = a.gen
	a.mu.Unlock()
	for g == nil && ctx.Err() == nil {
		var err error
		if g, err = a.open(ctx); err != nil {
			time.Sleep(20 * time.Millisecond) // a fault may be in the way
		}
	}
	if g != nil {
		a.mu.Lock()
		a.gen = g
		a.mu.Unlock()
	}
	return g
}

// open opens a new generation, recording it.
func (a *actor) open(ctx context.Context) (*generation, error) {
	a.mu.Lock()
	a.gens++
	id := fmt.Sprintf("%s#%d", a.name, a.gens)
	a.mu.Unlock()
	openCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	call := now()
	obs := newGenObserver(a.p, id)
	l, err := lock.Open(openCtx, a.p.plan.Addr, a.p.lockOptions(a.spec.TTL, obs)...)
	a.p.rec.add(chaosRecord{Kind: recOpen, ID: id, Actor: id, Call: call, Ret: now(), Class: classify(err), Err: a.p.scan.err("Open "+id, err), Note: a.spec.String()})
	if err != nil {
		obs.close()
		return nil, err
	}
	g := &generation{id: id, locker: l, obs: obs, inflight: map[*opCtx]struct{}{}}
	if a.spec.Manager {
		opts := []manager.Option{manager.WithStateTTL(a.spec.StateTTL)}
		if a.spec.Hold > 0 {
			opts = append(opts, manager.WithHold(a.spec.Hold))
		}
		g.manager = manager.New[counter](l, opts...)
	}
	return g, nil
}

// closeGen closes g's Manager, then its Locker, after cancelling every
// call in flight on it if cancelFirst, recording the Close.
func (a *actor) closeGen(g *generation, cancelFirst bool) {
	note := "close"
	call := now()
	if cancelFirst {
		note = "cancel calls in flight, then close"
		g.cancelInflight()
	}
	var err error
	if g.manager != nil {
		err = g.manager.Close()
	}
	err = errors.Join(err, g.locker.Close())
	g.obs.close() // Close delivered the events before it returned
	a.p.rec.add(chaosRecord{Kind: recClose, ID: g.id + ".close", Actor: g.id, Call: call, Ret: now(), Class: classify(err), Err: a.p.scan.err("Close "+g.id, err), Note: note})
}

// replace closes g, if it is still the current generation, and opens the
// next one.
func (a *actor) replace(ctx context.Context, g *generation, cancelFirst bool) {
	a.reopen.Lock()
	a.mu.Lock()
	if a.gen != g {
		a.mu.Unlock()
		a.reopen.Unlock()
		return
	}
	a.gen = nil
	a.mu.Unlock()
	a.closeGen(g, cancelFirst)
	a.reopen.Unlock()
	a.current(ctx)
}
