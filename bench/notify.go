package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// releaseStyle is how the plain go-redis lock releases: the design baton
// improves on comes in three styles, whose order of replies on the
// server differs (see DESIGN.md, "Why it exists").
type releaseStyle int

const (
	// releaseEval sends the compare-and-delete script alone.
	releaseEval releaseStyle = iota
	// releaseGetDel deletes with GETDEL and compares the token it gets
	// back afterwards: one command and no script, but a lease that had
	// expired deletes its successor's lock. The bench never lets a lease
	// expire; a service would.
	releaseGetDel
	// releasePingEval sends PING and the compare-and-delete script in one
	// pipelined write: the server then queues the PING's reply before the
	// notification and, writing newest first, writes the notification
	// first, giving the waiter a head start (DESIGN.md).
	releasePingEval
)

// releaseScript deletes the key only if it still holds the caller's
// token.
var releaseScript = redis.NewScript(
	`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`)

// notifyLocker is the lock written straightforwardly with go-redis: SET
// NX with a random token; a waiter subscribes to the key's keyspace
// channel and tries again on each del, expired or evicted event; the
// release is a compare-and-delete script.
type notifyLocker struct {
	client *redis.Client
	style  releaseStyle
}

func openNotify(style releaseStyle) func(context.Context, string) (locker, error) {
	return func(ctx context.Context, addr string) (locker, error) {
		client, err := newGoRedis(ctx, addr)
		if err != nil {
			return nil, fmt.Errorf("go-redis notify: %w", err)
		}
		if err := ensureKeyspaceEvents(ctx, client); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("go-redis notify: %w", err)
		}
		if err := releaseScript.Load(ctx, client).Err(); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("go-redis notify: loading the release script: %w", err)
		}
		return notifyLocker{client: client, style: style}, nil
	}
}

func (n notifyLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	var sub *redis.PubSub
	listened := false
	defer func() {
		if sub != nil {
			_ = sub.Close()
		}
		if listened {
			drain(sub.Channel())
		}
	}()
	for {
		ok, err := n.client.SetNX(ctx, key, token, lockTTL).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return func(ctx context.Context) error { return n.release(ctx, key, token) }, nil
		}
		if sub == nil {
			// Subscribe, then try again at once: a release between the
			// SET and the subscription would otherwise go unheard.
			sub = n.client.Subscribe(ctx, keyspaceChannel(n.client, key))
			if _, err := sub.Receive(ctx); err != nil {
				return nil, err
			}
			continue
		}
		listened = true
		if err := waitFreed(ctx, sub); err != nil {
			return nil, err
		}
	}
}

// waitFreed returns when the key's channel says it was deleted, expired
// or evicted.
func waitFreed(ctx context.Context, sub *redis.PubSub) error {
	ch := sub.Channel()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-ch:
			if !ok {
				return errors.New("go-redis notify: subscription closed")
			}
			switch m.Payload {
			case "del", "expired", "evicted":
				return nil
			}
		}
	}
}

// drainTimeout bounds how long drain waits for go-redis to close a
// subscription's channel.
const drainTimeout = time.Second

// drain reads ch, the channel of a closed subscription, until go-redis
// closes it. go-redis's reader goroutine blocks on a message no one reads
// for up to a minute after Close (its channel send timeout); drained, it
// sees the subscription closed and ends at once.
func drain(ch <-chan *redis.Message) {
	timeout := time.After(drainTimeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			return
		}
	}
}

func (n notifyLocker) release(ctx context.Context, key, token string) error {
	switch n.style {
	case releaseEval:
		deleted, err := releaseScript.Run(ctx, n.client, []string{key}, token).Int()
		if err == nil && deleted == 0 {
			err = notHeld(key)
		}
		return err
	case releaseGetDel:
		held, err := n.client.GetDel(ctx, key).Result()
		if err == nil && held != token {
			err = notHeld(key)
		}
		return err
	case releasePingEval:
		// The script was loaded when the lock opened; EVALSHA keeps the
		// write small, as a careful client would.
		var deleted *redis.Cmd
		_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Ping(ctx)
			deleted = releaseScript.EvalSha(ctx, p, []string{key}, token)
			return nil
		})
		if err != nil {
			return err
		}
		d, err := deleted.Int()
		if err == nil && d == 0 {
			err = notHeld(key)
		}
		return err
	}
	return fmt.Errorf("go-redis notify: release style %d unknown", n.style)
}

// notHeld is the error of a release that found key not the caller's.
func notHeld(key string) error {
	return fmt.Errorf("go-redis notify: %q was not held at release", key)
}

func (n notifyLocker) Close() error { return n.client.Close() }

// keyspaceChannel is the channel of key's keyspace events in the client's
// database.
func keyspaceChannel(c *redis.Client, key string) string {
	return "__keyspace@" + strconv.Itoa(c.Options().DB) + "__:" + key
}

// ensureKeyspaceEvents adds to notify-keyspace-events what the waiters
// need: keyspace channels (K), generic commands (g, for del), expired (x)
// and evicted (e) events, unless "A" already covers the last three.
func ensureKeyspaceEvents(ctx context.Context, c *redis.Client) error {
	v, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return fmt.Errorf("reading notify-keyspace-events: %w", err)
	}
	current := v["notify-keyspace-events"]
	need := "Kgxe"
	if strings.Contains(current, "A") {
		need = "K"
	}
	missing := ""
	for _, f := range need {
		if !strings.ContainsRune(current, f) {
			missing += string(f)
		}
	}
	if missing == "" {
		return nil
	}
	if err := c.ConfigSet(ctx, "notify-keyspace-events", current+missing).Err(); err != nil {
		return fmt.Errorf("setting notify-keyspace-events: %w", err)
	}
	return nil
}

// newToken returns 128 random bits in hex, an owner's token.
func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}
