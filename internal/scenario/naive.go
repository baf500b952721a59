package scenario

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
	"github.com/batonlock/baton/subscriber"
)

// naiveRelease writes the state and deletes the lock if the caller still
// owns it: the usual compare-and-delete, with the write-back in front.
const naiveRelease = `if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[3])
  redis.call('del', KEYS[1])
  return 1
end
return 0`

// naiveTTL is the naive lock's TTL, and how long a waiter that missed a
// notification sleeps before trying again.
const naiveTTL = 10 * time.Second

// naive is the design baton improves on, written straightforwardly: a
// waiter listens to the lock key's keyspace events and races for it when
// it hears a release. Nobody takes turns.
type naive struct {
	c        *conn.Client
	sub      *subscriber.Subscriber
	ping     bool   // release after a PING in the same write
	prefix   string // of every key
	stateTTL string // in milliseconds
}

func openNaive(ctx context.Context, addr, prefix string, ping bool) (*naive, error) {
	c, err := conn.NewClient(addr)
	if err != nil {
		return nil, err
	}
	if _, err := c.Conn(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	sub, err := subscriber.New(ctx, addr)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &naive{c: c, sub: sub, ping: ping, prefix: prefix,
		stateTTL: strconv.FormatInt(stateTTL.Milliseconds(), 10)}, nil
}

// lockKey and stateKey share a hash tag, as baton's keys do.
func (n *naive) lockKey(token string) string  { return n.prefix + "{" + token + "}" }
func (n *naive) stateKey(token string) string { return n.lockKey(token) + ":state" }

func (n *naive) close() {
	_ = n.sub.Close()
	_ = n.c.Close()
}

// modify runs fn on the state under the lock. asked reports the state's
// count at B's first failed attempt, read in the same write as that
// attempt: the count Redis had when it refused the lock to this caller.
func (n *naive) modify(ctx context.Context, token string, fn func(*Counter)) (askedAt int, asked bool, err error) {
	owner, err := randomToken()
	if err != nil {
		return 0, false, err
	}
	lockKey, stateKey := n.lockKey(token), n.stateKey(token)
	ttl := strconv.FormatInt(naiveTTL.Milliseconds(), 10)
	var w *subscriber.Waiter
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	for {
		replies, err := n.c.DoMulti(ctx,
			[]string{"SET", lockKey, owner, "NX", "PX", ttl},
			[]string{"GET", stateKey})
		if err != nil {
			return askedAt, asked, err
		}
		state, err := decodeCounter(replies[1])
		if err != nil {
			return askedAt, asked, err
		}
		if !replies[0].IsNull() {
			return askedAt, asked, n.release(ctx, lockKey, stateKey, owner, state, fn)
		}
		if !asked {
			askedAt, asked = state.N, true
		}
		if w == nil {
			// Listen before the next attempt, so that a release between
			// the two is heard.
			if w, err = n.sub.Watch(ctx, subscriber.Topic{Key: lockKey}); err != nil {
				return askedAt, asked, err
			}
			continue
		}
		select {
		case <-w.Wake():
		case <-time.After(naiveTTL):
		case <-ctx.Done():
			return askedAt, asked, ctx.Err()
		}
	}
}

func (n *naive) release(ctx context.Context, lockKey, stateKey, owner string, state Counter, fn func(*Counter)) error {
	fn(&state)
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	eval := []string{"EVAL", naiveRelease, "2", lockKey, stateKey, owner, string(data), n.stateTTL}
	var reply resp.Value
	if n.ping {
		replies, err := n.c.DoMulti(ctx, []string{"PING"}, eval)
		if err != nil {
			return err
		}
		reply = replies[1]
	} else if reply, err = n.c.Do(ctx, eval...); err != nil {
		return err
	}
	if reply.Int != 1 {
		return errors.New("naive lock: lost before the write-back")
	}
	return nil
}

func (n *naive) get(ctx context.Context, token string) (Counter, error) {
	v, err := n.c.Do(ctx, "GET", n.stateKey(token))
	if err != nil {
		return Counter{}, err
	}
	return decodeCounter(v)
}

func decodeCounter(v resp.Value) (Counter, error) {
	var c Counter
	if v.IsNull() {
		return c, nil
	}
	if err := json.Unmarshal([]byte(v.Str), &c); err != nil {
		return c, fmt.Errorf("naive lock: state: %w", err)
	}
	return c, nil
}

func randomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
