package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/batonlock/baton/internal/runkeys"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// Counter is the state the scenario modifies.
type Counter struct{ N int }

// stateTTL keeps the scenario's state from outliving a run that could not
// delete it.
const stateTTL = 10 * time.Minute

// Settings are what every configuration's run shares.
type Settings struct {
	// Addr is the server (see conn.Dial).
	Addr string
	// Prefix starts every key of the run; each run adds a random part.
	// Default: "baton:scenario:".
	Prefix string
	// Iterations is how many modifications A makes. Default: 1000.
	Iterations int
	// BAfter is how many of A's modifications finish before B starts.
	// Default: 10.
	BAfter int
	// CostSamples is how many uncontended modifications the cost is the
	// median of. Default: 100.
	CostSamples int
	// Counting is how passes are counted (see PrepareCounting). Default:
	// FromCall.
	Counting Counting
	// Progress, if set, is called after each of A's modifications and
	// each cost sample: Steps calls per run.
	Progress func()
}

// Steps is how many times a run calls Progress.
func (s Settings) Steps() int {
	s = s.withDefaults()
	return s.Iterations + s.CostSamples
}

func (s Settings) withDefaults() Settings {
	if s.Prefix == "" {
		s.Prefix = "baton:scenario:"
	}
	if s.Iterations == 0 {
		s.Iterations = 1000
	}
	if s.BAfter == 0 {
		s.BAfter = 10
	}
	if s.CostSamples == 0 {
		s.CostSamples = 100
	}
	if s.Counting == "" {
		s.Counting = FromCall
	}
	if s.Progress == nil {
		s.Progress = func() {}
	}
	return s
}

// Result is what one run of a configuration measured.
type Result struct {
	Config Config
	// Passed is how many of A's modifications passed B's, counted as
	// Counting says.
	Passed   int
	Counting Counting
	// Waited is how long B's Modify took, from its call to its return.
	Waited time.Duration
	// Final is the count after both; Exact is whether it is every
	// modification's, Iterations+1.
	Final int
	Exact bool
	// ModifyCost is the median of CostSamples modifications by A alone,
	// back to back (so, for a configuration with a hold, held ones).
	ModifyCost time.Duration
}

// instance is one process's way of modifying the token: baton's manager,
// or the naive lock.
type instance struct {
	modify func(ctx context.Context, token string, fn func(*Counter)) (askedAt int, asked bool, err error)
	get    func(ctx context.Context, token string) (Counter, error)
	// stateKey is where a token's state lives.
	stateKey func(token string) string
	close    func()
}

// Run runs the scenario once in configuration cfg.
func Run(ctx context.Context, s Settings, cfg Config) (Result, error) {
	s = s.withDefaults()
	prefix, err := runkeys.NewPrefix(s.Prefix)
	if err != nil {
		return Result{}, err
	}
	// Deferred first, so that it runs last: after both instances have
	// let go of their locks.
	defer removeKeys(s.Addr, prefix)
	const token, costToken = "session", "cost"
	a, err := open(ctx, s.Addr, prefix, cfg)
	if err != nil {
		return Result{}, fmt.Errorf("instance A: %w", err)
	}
	defer a.close()
	b, err := open(ctx, s.Addr, prefix, cfg)
	if err != nil {
		return Result{}, fmt.Errorf("instance B: %w", err)
	}
	defer b.close()

	var order *serverOrder
	if s.Counting == ServerOrder && !cfg.Naive {
		order, err = watchServerOrder(ctx, s.Addr, a.stateKey(token), prefix+"{"+token+"}:wanted")
		if err != nil {
			return Result{}, fmt.Errorf("watching the server's order: %w", err)
		}
		defer order.close()
	}

	res := Result{Config: cfg, Counting: s.Counting}
	var seen, askedAt int
	var asked bool
	var bErr error // B's Modify, checked once B is done
	start := make(chan struct{})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-start:
		case <-runCtx.Done():
			bErr = runCtx.Err()
			return
		}
		t0 := time.Now()
		askedAt, asked, bErr = b.modify(runCtx, token, func(c *Counter) {
			seen = c.N
			c.N++
		})
		res.Waited = time.Since(t0)
	})
	aErr := func() error {
		for i := range s.Iterations {
			if _, _, err := a.modify(runCtx, token, increment); err != nil {
				return fmt.Errorf("instance A, modification %d: %w", i+1, err)
			}
			s.Progress()
			if i == s.BAfter-1 {
				close(start)
			}
		}
		return nil
	}()
	if aErr != nil {
		cancel()
	}
	wg.Wait()
	if err := errors.Join(aErr, wrapB(bErr)); err != nil {
		return Result{}, err
	}

	final, err := a.get(ctx, token)
	if err != nil {
		return Result{}, fmt.Errorf("reading the final count: %w", err)
	}
	res.Final, res.Exact = final.N, final.N == s.Iterations+1
	switch {
	case cfg.Naive:
		// The naive lock read the state in the same write as B's first
		// refused attempt: exact in the server's order on any server.
		res.Counting = ServerOrder
		if asked {
			res.Passed = seen - askedAt
		}
	case order != nil:
		if res.Passed, err = order.passed(ctx, seen); err != nil {
			return Result{}, fmt.Errorf("counting passes: %w", err)
		}
	default:
		res.Passed = max(0, seen-s.BAfter)
	}

	costs := make([]time.Duration, 0, s.CostSamples)
	for range s.CostSamples {
		t0 := time.Now()
		if _, _, err := a.modify(ctx, costToken, increment); err != nil {
			return Result{}, fmt.Errorf("uncontended modification: %w", err)
		}
		costs = append(costs, time.Since(t0))
		s.Progress()
	}
	slices.Sort(costs)
	res.ModifyCost = costs[len(costs)/2]
	return res, nil
}

func increment(c *Counter) { c.N++ }

func wrapB(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("instance B: %w", err)
}

// open makes one instance: its own connections, as a separate process
// would have.
func open(ctx context.Context, addr, prefix string, cfg Config) (*instance, error) {
	if cfg.Naive {
		return openNaiveInstance(ctx, addr, prefix, cfg.NaivePing)
	}
	opts := append(cfg.LockOptions(), lock.WithKeyPrefix(prefix))
	l, err := lock.Open(ctx, addr, opts...)
	if err != nil {
		return nil, err
	}
	mopts := []manager.Option{manager.WithKeyPrefix(prefix), manager.WithStateTTL(stateTTL)}
	if cfg.Hold > 0 {
		mopts = append(mopts, manager.WithHold(cfg.Hold))
	}
	m := manager.New[Counter](l, mopts...)
	return &instance{
		modify: func(ctx context.Context, token string, fn func(*Counter)) (int, bool, error) {
			return 0, false, m.Modify(ctx, token, func(c *Counter) error { fn(c); return nil })
		},
		get:      m.Get,
		stateKey: m.Key,
		close: func() {
			_ = m.Close()
			_ = l.Close()
		},
	}, nil
}

func openNaiveInstance(ctx context.Context, addr, prefix string, ping bool) (*instance, error) {
	n, err := openNaive(ctx, addr, prefix, ping)
	if err != nil {
		return nil, err
	}
	return &instance{
		modify:   n.modify,
		get:      n.get,
		stateKey: n.stateKey,
		close:    n.close,
	}, nil
}
