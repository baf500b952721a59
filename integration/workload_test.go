package integration_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

// counter is the state the workload's Modify calls increment.
type counter struct {
	N int `json:"n"`
}

// mix is a workload's shape.
type mix struct {
	fair       bool
	hold       time.Duration // manager.WithHold; 0 for none
	ttl        time.Duration // lock.WithTTL
	tokens     int           // how many tokens (locks and counts)
	goroutines int           // per instance
	opTimeout  time.Duration // bounds every call
	lockShare  float64       // of operations that are Lock+Unlock, not Modify
	run        string        // names this run's tokens apart from earlier runs' on the server
}

// defaultMix is the soak's shape, which the fault tests share.
var defaultMix = mix{ttl: time.Second, tokens: 16, goroutines: 8, opTimeout: 10 * time.Second, lockShare: 0.2}

func (m mix) String() string {
	s := "fast"
	if m.fair {
		s = "fair"
	}
	if m.hold > 0 {
		s += "+hold"
	}
	return s
}

func (m mix) token(i int) string { return fmt.Sprintf("%st%02d", m.run, i) }

func (m mix) lockOptions() []lock.Option {
	opts := []lock.Option{lock.WithTTL(m.ttl)}
	if m.fair {
		opts = append(opts, lock.WithFair())
	}
	return opts
}

// instance is one service instance: a Locker and a Manager on it.
type instance struct {
	locker  *lock.Locker
	manager *manager.Manager[counter]
}

func openInstance(ctx context.Context, addr string, m mix, opts ...lock.Option) (*instance, error) {
	l, err := lock.Open(ctx, addr, append(m.lockOptions(), opts...)...)
	if err != nil {
		return nil, err
	}
	var mopts []manager.Option
	if m.hold > 0 {
		mopts = append(mopts, manager.WithHold(m.hold))
	}
	return &instance{locker: l, manager: manager.New[counter](l, mopts...)}, nil
}

func (in *instance) close() error {
	return errors.Join(in.manager.Close(), in.locker.Close())
}

// run has m.goroutines goroutines call Modify (an increment) and Lock +
// Unlock on random tokens until ctx ends, recording every call to rec. It
// returns once they have all returned. Calls get contexts of their own,
// bounded by m.opTimeout, so that the end of the run cuts none short.
func (in *instance) run(ctx context.Context, m mix, rec *recorder) {
	var wg sync.WaitGroup
	for range m.goroutines {
		wg.Go(func() {
			for ctx.Err() == nil {
				token := m.token(rand.IntN(m.tokens))
				if rand.Float64() < m.lockShare {
					in.lockOnce(m, rec, token)
				} else {
					in.modifyOnce(m, rec, token)
				}
			}
		})
	}
	wg.Wait()
}

func (in *instance) modifyOnce(m mix, rec *recorder, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opTimeout)
	defer cancel()
	id := rec.newOp()
	rec.add(event{Kind: kindCall, Op: id, Token: token})
	defer recordPanic(rec, id, token, false)
	err := in.manager.Modify(ctx, token, func(c *counter) error {
		rec.add(event{Kind: kindSeen, Op: id, Token: token, Old: c.N})
		c.N++
		return nil
	})
	rec.add(event{Kind: kindDone, Op: id, Token: token, Outcome: outcome(err), Err: errText(err), Ack: errors.Is(err, lock.ErrNotAcquired)})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (in *instance) lockOnce(m mix, rec *recorder, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opTimeout)
	defer cancel()
	id := rec.newOp()
	rec.add(event{Kind: kindCall, Op: id, Token: token})
	defer recordPanic(rec, id, token, true)
	lease, err := in.locker.Lock(ctx, token)
	if err != nil {
		rec.add(event{Kind: kindDone, Op: id, Token: token, Outcome: outcomeFailed, Err: errText(err), Ack: errors.Is(err, lock.ErrNotAcquired), Lock: true})
		return
	}
	rec.add(event{Kind: kindLeased, Op: id, Token: token, Fence: lease.Token()})
	at := now()
	err = lease.Unlock(ctx)
	if err == nil {
		rec.add(event{Kind: kindReleased, Op: id, Token: token, Time: at})
	}
	rec.add(event{Kind: kindDone, Op: id, Token: token, Outcome: outcome(err), Err: errText(err), Lock: true})
}

// recordPanic, deferred by a call, records a panic of the code under
// test as the call's end, its outcome unknown, for the checks to report,
// and lets the workload go on: the test then fails with its figures, its
// servers removed, instead of the whole run dying with them left behind.
func recordPanic(rec *recorder, id, token string, isLock bool) {
	if r := recover(); r != nil {
		rec.add(event{Kind: kindDone, Op: id, Token: token, Outcome: outcomeUncertain, Lock: isLock, Panic: fmt.Sprintf("%v\n%s", r, debug.Stack())})
	}
}

// outcome reads what a Modify's error says about its write.
func outcome(err error) string {
	var uncertain *conn.UncertainError
	switch {
	case err == nil:
		return outcomeOK
	case errors.As(err, &uncertain):
		return outcomeUncertain
	default:
		return outcomeFailed
	}
}

// readCounts records a final read of every token's count, through a
// Manager of its own.
func readCounts(ctx context.Context, addr string, m mix, rec *recorder, opts ...lock.Option) error {
	in, err := openInstance(ctx, addr, mix{ttl: m.ttl, fair: m.fair, run: m.run}, opts...)
	if err != nil {
		return err
	}
	defer in.close()
	for i := range m.tokens {
		token := m.token(i)
		id := rec.newOp()
		rec.add(event{Kind: kindCall, Op: id, Token: token})
		c, err := in.manager.Get(ctx, token)
		if err != nil {
			return fmt.Errorf("reading %s: %w", token, err)
		}
		rec.add(event{Kind: kindRead, Op: id, Token: token, Old: c.N})
	}
	return nil
}
