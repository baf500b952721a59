package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonlock/baton/internal/cluster"
	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/resp"
)

// ErrInvalid is matched by errors for bad arguments: an empty token, a nil
// function or context, an option of the wrong type or out of range, a
// state prefix that does not fit the Locker's (WithKeyPrefix). Nothing was
// sent. Modify's refusal of a state over the size limit (WithMaxStateSize)
// matches it too: that comes after the lock was taken, and nothing was
// written.
//
// It is lock.ErrInvalid, the same value: a bad argument is one condition,
// whichever package refused it, and either name matches either refusal.
// The errors that wrap it begin with the package that refused.
var ErrInvalid = lock.ErrInvalid

// ErrUndecodable is matched when the state stored for a token cannot be
// decoded. The state is left as it is.
var ErrUndecodable = errors.New("manager: state cannot be decoded")

// maxStateTTL is the longest state TTL (WithStateTTL): a hundred years
// of milliseconds, which Redis and Lua take exactly. It is the limit
// package lock sets on every TTL it sends, which a write-back's state TTL
// must pass there too.
const maxStateTTL = 100 * 365 * 24 * time.Hour

// ErrClosed is matched by the error of a Modify once the Manager's Close
// has begun, and of every call on a Manager whose Locker is closed (or
// closing). Either way the call did nothing, and the next will fail too.
//
// It is lock.ErrClosed, the same value, so that either name matches
// either closing. The errors that wrap it say which was closed.
var ErrClosed = lock.ErrClosed

// Manager modifies state of type T per token under the token's lock.
type Manager[T any] struct {
	locker *lock.Locker
	codec  Codec[T]
	prefix string
	ttl    time.Duration
	hold   time.Duration
	// maxState is the largest encoded state written (WithMaxStateSize).
	maxState int
	// closeWait is the longest Close waits for write-backs on their way
	// (WithCloseWait).
	closeWait time.Duration
	err       error // a bad option, reported by every call

	epoch    time.Time       // the origin of holding.lastWrite, on the monotonic clock
	closed   context.Context // ends at Close: waits for a lock end, holds let go
	close    context.CancelFunc
	watchers sync.WaitGroup // one goroutine per hold in progress

	mu      sync.Mutex
	holds   map[string]*holding // guarded by mu: per token, while used or held
	closing bool                // guarded by mu: Close has begun
	// writing counts the write-backs on their way (beginWrite), which
	// Close waits for, closeWait at most, so that none lands after it
	// returned but one that is stuck. drained is made by Close while
	// some are, and closed by the last to end.
	writing int           // guarded by mu
	drained chan struct{} // guarded by mu
	// cuts are the cancel functions of the acquires in progress under a
	// context of their own (see untilClose), which Close calls; a slot
	// that is free is nil, and listed in free.
	cuts []context.CancelFunc // guarded by mu
	free []int                // guarded by mu
}

// New returns a Manager on l. A bad option is reported by every call.
func New[T any](l *lock.Locker, opts ...Option) *Manager[T] {
	s := defaultSettings()
	for _, o := range opts {
		o(&s)
	}
	m := &Manager[T]{
		locker: l, codec: JSON[T]{}, prefix: s.prefix, ttl: s.ttl, hold: s.hold, maxState: s.maxState, closeWait: s.closeWait,
		holds: map[string]*holding{}, epoch: time.Now(),
	}
	m.closed, m.close = context.WithCancel(context.Background())
	if s.codec != nil {
		c, ok := s.codec.(Codec[T])
		if !ok {
			m.err = fmt.Errorf("manager: %w: codec %T is not a Codec for %T", ErrInvalid, s.codec, *new(T))
		}
		m.codec = c
	}
	switch {
	case l == nil:
		m.err = fmt.Errorf("manager: %w: nil Locker", ErrInvalid)
	case s.ttl < time.Millisecond || s.ttl > maxStateTTL:
		m.err = fmt.Errorf("manager: %w: state TTL %v, want 1ms to 100 years", ErrInvalid, s.ttl)
	case s.hold < 0:
		m.err = fmt.Errorf("manager: %w: hold %v, want 0 or more", ErrInvalid, s.hold)
	case s.closeWait < 0:
		m.err = fmt.Errorf("manager: %w: close wait %v, want 0 or more", ErrInvalid, s.closeWait)
	case s.maxState < 1:
		m.err = fmt.Errorf("manager: %w: state size limit %d, want at least 1 byte", ErrInvalid, s.maxState)
	}
	if m.err == nil {
		m.err = m.checkPrefixes()
	}
	return m
}

// checkPrefixes refuses a state prefix that puts a token's state under
// another hash tag than the token's lock, for some token (see
// WithKeyPrefix). Redis hashes the part of a key between its first '{'
// and the first '}' after it, or the whole key if that part is empty. So
// the tag of <prefix>{t}<suffix> is fixed by the prefix (a '{' and a '}'
// in it), or is the token itself (no '{' in the prefix), or begins in the
// prefix and runs into the token (a '{' in the prefix, no '}' after it),
// or is the whole key. Compared as strings, not as slots, two such tags
// agree for every token when they are of one kind with one fixed part,
// and for one token at most otherwise: two tokens tell which.
func (m *Manager[T]) checkPrefixes() error {
	for _, token := range [...]string{"a", "b"} {
		if err := m.checkTag(token); err != nil {
			return err
		}
	}
	return nil
}

// checkTag refuses a token whose state would not share its lock's hash
// tag, which the write-back's script, on Redis Cluster, may not touch.
// Tags that differ may still share a slot by chance, for some tokens and
// not others: the tags decide, so that a prefix works for every token or
// for none. A token with braces of its own changes nothing: the tag of
// both keys begins at the same brace, in the prefixes or just before the
// token, and ends at the first '}' after it, which lies in the same place
// in both.
func (m *Manager[T]) checkTag(token string) error {
	lockKey, stateKey := m.locker.Key(token), m.Key(token)
	if cluster.HashTag(lockKey) != cluster.HashTag(stateKey) {
		return fmt.Errorf("manager: %w: the state of token %q, %q, would not share the hash tag of its lock, %q: see WithKeyPrefix", ErrInvalid, token, stateKey, lockKey)
	}
	return nil
}

// sinceEpoch is the time now, for holding.lastWrite.
func (m *Manager[T]) sinceEpoch() int64 { return int64(time.Since(m.epoch)) }

// Key is where the state of token lives.
// It shares the hash tag of the token's lock, so that the lock's scripts
// may write it on Redis Cluster too.
func (m *Manager[T]) Key(token string) string { return m.prefix + "{" + token + "}:state" }

// Close ends the Manager's modifications: from the moment it begins, no
// Modify starts its function or a write-back, and each fails with an
// error matching ErrClosed, but for one whose write-back is already on
// its way (below). Get still works.
//
// A Modify that waits for its lock when Close begins stops waiting and
// fails, without running its function; what its acquire may have taken
// is released, in the Locker's background where the acquire was on its
// way, which the Locker's Close waits for. Close does not wait for a
// function in progress, which is the caller's code and may wait on what
// the caller stops next: the Modify that runs it writes nothing, releases
// the lock once the function returns, and fails with ErrClosed.
//
// Close waits for the write-backs already on their way, whose Modify
// returns what the server said, for a second at most (WithCloseWait).
// One still on its way then is stuck, most likely before it could be sent: its client
// waits for a primary that the sentinels name and nobody can reach, say,
// or for a cluster that cannot serve its slot, for as long as its
// Modify's context allows (the release timeout at most, for a write-back
// that also releases). Close leaves it to the Locker's Close, which
// ends every call in bounded time; its Modify returns what became of it.
// Last, Close lets go of every lock held between modifications
// (WithHold), and waits for that: for releases, which the Locker bounds
// by its release timeout. So Close returns in bounded time, and the
// usual shutdown, this Close and then the Locker's, ends within the
// bounds the two Closes state.
//
// Once Close has returned, the Manager writes nothing more, but for:
//
//   - a write-back still on its way a second (WithCloseWait) after
//     Close began, as above, which may land until its Modify's context ends or the
//     Locker's Close ends it;
//   - a write-back whose caller's context ended with it on its way: the
//     server may run it yet, or the Locker finish it in the background,
//     which the Locker's Close waits for.
//
// Either way the write-back is fenced: it lands only while its lease
// still holds the lock.
func (m *Manager[T]) Close() error {
	m.mu.Lock()
	m.closing = true
	cuts := m.cuts
	m.cuts, m.free = nil, nil
	if m.writing > 0 && m.drained == nil {
		m.drained = make(chan struct{})
	}
	drained := m.drained
	m.mu.Unlock()
	m.close()
	for _, cancel := range cuts {
		if cancel != nil {
			cancel()
		}
	}
	if drained != nil {
		timer := time.NewTimer(m.closeWait)
		select {
		case <-drained:
		case <-timer.C:
		}
		timer.Stop()
	}
	m.watchers.Wait()
	return nil
}

// isClosing reports whether Close has begun.
func (m *Manager[T]) isClosing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closing
}

// beginWrite counts a write-back in, so that Close waits for it, unless
// Close has begun: then nothing may be written, and the caller lets go of
// its lease and returns errClosed. A true return must be matched by
// endWrite. Under mu, as Close sets closing: no write-back is added once
// Close waits.
func (m *Manager[T]) beginWrite() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return false
	}
	m.writing++
	return true
}

// endWrite counts a write-back out, and tells Close, if it waits, that
// the last has ended.
func (m *Manager[T]) endWrite() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writing--
	if m.writing == 0 && m.drained != nil {
		close(m.drained)
		m.drained = nil
	}
}

// errClosed is the error of a Modify of token once Close has begun.
func errClosed(token string) error {
	return fmt.Errorf("manager: modify %q: the Manager is %w", token, ErrClosed)
}

func (m *Manager[T]) check(ctx context.Context, token string) error {
	switch {
	case m.err != nil:
		return m.err
	case ctx == nil:
		return fmt.Errorf("manager: %w: nil context", ErrInvalid)
	case token == "":
		return fmt.Errorf("manager: %w: empty token", ErrInvalid)
	case token[0] == '}':
		// {}...: an empty hash tag, which would put the state in another
		// cluster slot than the lock.
		return fmt.Errorf("manager: %w: token %q begins with '}'", ErrInvalid, token)
	}
	// New's checkPrefixes has decided for every token whether its state
	// shares its lock's hash tag; the commit refuses a state key that
	// does not, before sending it, as a last backstop. A check here too
	// would cost every Modify and Get two allocations.
	return nil
}

// Get reads the state of token without the lock: a snapshot that may be
// outdated by the time it returns. Missing state is T's zero value.
func (m *Manager[T]) Get(ctx context.Context, token string) (T, error) {
	var v T
	if err := m.check(ctx, token); err != nil {
		return v, err
	}
	info, err := m.locker.Inspect(ctx, token, []string{"GET", m.Key(token)})
	if err == nil && len(info.Replies) != 1 {
		// A bug below, not the server's doing; better said than a panic.
		err = fmt.Errorf("%d replies to the state's GET, want 1", len(info.Replies))
	}
	if err == nil {
		err = info.Replies[0].Err()
	}
	if err != nil {
		return v, fmt.Errorf("manager: get %q: %w", token, err)
	}
	err = m.decode(token, info.Replies[0], &v)
	return v, err
}

// decode reads a GET reply into v: missing state is T's zero value.
func (m *Manager[T]) decode(token string, reply resp.Value, v *T) error {
	if reply.IsNull() {
		return nil
	}
	if reply.Type != resp.Bulk {
		return fmt.Errorf("manager: token %q, key %q: %w: a %s, not a string", token, m.Key(token), ErrUndecodable, reply.Type)
	}
	if err := m.codec.Decode([]byte(reply.Str), v); err != nil {
		return fmt.Errorf("manager: token %q, key %q: %w: %w", token, m.Key(token), ErrUndecodable, err)
	}
	return nil
}
