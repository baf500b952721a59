package lock_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/observe"
)

// textRecorder keeps every text that leaves a Locker for its user: the
// errors its calls return (and every error they wrap, which a caller may
// unwrap and print), its observers' events, and WithLogger's records.
type textRecorder struct {
	mu    sync.Mutex
	texts []string // guarded by mu
}

func (r *textRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, s)
}

// addErr keeps err's text and that of every error it wraps.
func (r *textRecorder) addErr(err error) {
	if err == nil {
		return
	}
	r.add(err.Error())
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		r.addErr(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			r.addErr(e)
		}
	}
}

func (r *textRecorder) Observe(e observe.Event) {
	r.add(fmt.Sprintf("%v %v %q %v %v %v", e.Kind, e.Op, e.Key, e.Mode, e.How, e.Reason))
	r.addErr(e.Err)
}

// Write takes the log handler's records.
func (r *textRecorder) Write(p []byte) (int, error) {
	r.add(string(p))
	return len(p), nil
}

// requireNone fails t if any text holds secret, as written or
// percent-encoded, and says how many texts it read: a run that saw no
// error would prove nothing.
func (r *textRecorder) requireNone(t *testing.T, secret string, atLeast int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	errorish := 0
	for _, text := range r.texts {
		for _, form := range redistest.SecretForms(secret) {
			require.NotContains(t, text, form)
		}
		if strings.Contains(text, "conn:") || strings.Contains(text, "error") {
			errorish++
		}
	}
	t.Logf("%d texts, %d of them errors or error records: no password", len(r.texts), errorish)
	require.GreaterOrEqual(t, errorish, atLeast, "the faults caused too few errors to tell")
}

// openRecorded opens a Locker on addr whose every text goes to rec.
func openRecorded(t *testing.T, addr string, rec *textRecorder, opts ...lock.Option) *lock.Locker {
	t.Helper()
	logger := slog.New(slog.NewJSONHandler(rec, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts = append(opts, lock.WithObserver(rec), lock.WithLogger(logger), lock.WithReleaseTimeout(time.Second), lock.WithTTL(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lock.Open(ctx, addr, opts...)
	require.NoError(t, err)
	return l
}

// churnRecorded makes every kind of call on l, from a few goroutines, until ctx
// ends, and hands their errors to rec.
func churnRecorded(ctx context.Context, l *lock.Locker, rec *textRecorder) {
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("k%d", (g+i)%4)
				call, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				ls, err := l.Lock(call, key)
				rec.addErr(err)
				if err == nil {
					rec.addErr(ls.Extend(call, time.Second))
					_, err = l.Inspect(call, key)
					rec.addErr(err)
					rec.addErr(ls.Unlock(call))
				}
				_, err = l.TryLock(call, key+"t")
				rec.addErr(err)
				cancel()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// underFault churns on l while fault runs, and a moment before and after.
func underFault(t *testing.T, l *lock.Locker, rec *textRecorder, fault func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { churnRecorded(ctx, l, rec) })
	time.Sleep(200 * time.Millisecond)
	fault()
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()
	rec.addErr(l.Close())
}

// TestNoFaultPrintsThePassword runs calls of every kind through faults
// that make a Locker redial, fail over or give up (a server that goes
// away and comes back, restarts, freezes, refuses the password; a
// sentinel that goes down; a cluster node that dies) and searches every
// error, event and log record for the password: the server's, and the
// sentinels' own.
func TestNoFaultPrintsThePassword(t *testing.T) {
	const secret = "s3cr3t-pw"
	single := func(t *testing.T) (*redistest.Server, string) {
		srv := redistest.Start(t, redistest.WithConfig("requirepass "+secret))
		return srv, "redis://:" + secret + "@" + srv.Addr
	}
	for _, mode := range []string{"fast", "fair"} {
		t.Run(mode+"/away", func(t *testing.T) {
			srv, _ := single(t)
			proxy := proxied(t, srv)
			rec := &textRecorder{}
			l := openRecorded(t, "redis://:"+secret+"@"+proxy.Addr(), rec, modeOptions(mode)...)
			underFault(t, l, rec, func() {
				proxy.Refuse(true)
				proxy.Reset()
				time.Sleep(1500 * time.Millisecond)
				proxy.Refuse(false)
			})
			rec.requireNone(t, secret, 1)
		})
		t.Run(mode+"/restart", func(t *testing.T) {
			srv, addr := single(t)
			rec := &textRecorder{}
			l := openRecorded(t, addr, rec, modeOptions(mode)...)
			underFault(t, l, rec, func() { srv.Restart(t) })
			rec.requireNone(t, secret, 1)
		})
		t.Run(mode+"/pause", func(t *testing.T) {
			srv, addr := single(t)
			rec := &textRecorder{}
			l := openRecorded(t, addr, rec, modeOptions(mode)...)
			underFault(t, l, rec, func() {
				srv.Pause(t, 1500*time.Millisecond)
				time.Sleep(1500 * time.Millisecond)
			})
			rec.requireNone(t, secret, 1)
		})
		t.Run(mode+"/refused password", func(t *testing.T) {
			_, addr := single(t)
			rec := &textRecorder{}
			l := openRecorded(t, addr, rec, modeOptions(mode)...)
			underFault(t, l, rec, func() {
				// Another password, and every client dropped: each
				// redial is refused until it is set back.
				admin, err := conn.Dial(context.Background(), addr)
				require.NoError(t, err)
				defer admin.Close()
				_, err = admin.DoMulti(context.Background(), []string{"CONFIG", "SET", "requirepass", "other"}, []string{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}, []string{"CLIENT", "KILL", "TYPE", "pubsub"})
				require.NoError(t, err)
				time.Sleep(1500 * time.Millisecond)
				_, err = admin.Do(context.Background(), "CONFIG", "SET", "requirepass", secret)
				require.NoError(t, err)
			})
			rec.requireNone(t, secret, 1)
		})
	}
	t.Run("sentinel down", func(t *testing.T) {
		const sentinelSecret = "s3nt1nel-pw"
		s := redistest.StartSentinels(t, 1, 1, "requirepass "+sentinelSecret)
		addr := s.URL() + "?sentinel_password=" + sentinelSecret
		rec := &textRecorder{}
		l := openRecorded(t, addr, rec)
		underFault(t, l, rec, func() {
			// The sentinel goes; the primary drops every client, so
			// that each redial asks the sentinel, which is not there.
			primary := s.Primary(t)
			s.Sentinels.Sentinels[0].Stop()
			primary.Do(t, "CLIENT", "KILL", "TYPE", "normal")
			primary.Do(t, "CLIENT", "KILL", "TYPE", "pubsub")
			time.Sleep(1500 * time.Millisecond)
		})
		rec.requireNone(t, sentinelSecret, 1)
	})
	t.Run("cluster node down", func(t *testing.T) {
		c := redistest.StartCluster(t, 3, 0, redistest.WithConfig("requirepass "+secret, "masterauth "+secret))
		var seeds []string
		for _, n := range c.Nodes() {
			seeds = append(seeds, n.Addr)
		}
		rec := &textRecorder{}
		l := openRecorded(t, "redis+cluster://:"+secret+"@"+strings.Join(seeds, ","), rec)
		underFault(t, l, rec, func() {
			c.Kill(t, c.Nodes()[0])
			time.Sleep(1500 * time.Millisecond)
		})
		rec.requireNone(t, secret, 1)
	})
}
