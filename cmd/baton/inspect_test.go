package main_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/lock"
)

// inspected is inspect's --json document.
type inspected struct {
	Addr     string            `json:"addr"`
	Key      string            `json:"key"`
	RedisKey string            `json:"redis_key"`
	Mode     string            `json:"mode"`
	ModeKeys string            `json:"mode_keys"`
	Held     bool              `json:"held"`
	Holder   *string           `json:"holder"`
	TTLms    *int64            `json:"ttl_ms"`
	Token    *uint64           `json:"token"`
	Wanted   bool              `json:"wanted"`
	Queue    []inspectedWaiter `json:"queue"`
}

// inspectedWaiter is one waiter of inspected's queue.
type inspectedWaiter struct {
	Owner       string `json:"owner"`
	LeaseLeftMs int64  `json:"lease_left_ms"`
}

// inspectJSON runs inspect with --json and decodes its stdout, which must
// hold the one document and nothing else.
func inspectJSON(t *testing.T, args ...string) inspected {
	t.Helper()
	r := runBaton(t, 30*time.Second, nil, append([]string{"inspect", "--json"}, args...)...)
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	return decodeInspected(t, r.stdout)
}

// decodeInspected decodes stdout, which must hold one document of
// inspect --json and nothing else.
func decodeInspected(t *testing.T, stdout string) inspected {
	t.Helper()
	var doc inspected
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&doc), stdout)
	require.False(t, dec.More(), "one document only: %s", stdout)
	return doc
}

func openLocker(t *testing.T, srv *redistest.Server, opts ...lock.Option) *lock.Locker {
	t.Helper()
	l, err := lock.Open(context.Background(), srv.Addr, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestInspectHeldLockShowsTTLAndToken(t *testing.T) {
	srv := redistest.Start(t)
	l := openLocker(t, srv, lock.WithTTL(30*time.Second))
	ls, err := l.Lock(context.Background(), "orders")
	require.NoError(t, err)

	r := runBaton(t, 30*time.Second, nil, "inspect", "--addr", srv.Addr, "orders")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "baton:{orders}")
	require.Contains(t, r.stdout, "(mode unknown)\n")
	require.Contains(t, r.stdout, "held by:")
	require.Contains(t, r.stdout, "TTL left:")
	require.Contains(t, r.stdout, "fencing token:   "+strconv.FormatUint(ls.Token(), 10)+"\n")
	require.Contains(t, r.stdout, "asked to let go: no\n")

	doc := inspectJSON(t, "--addr", srv.Addr, "orders")
	require.Equal(t, inspected{
		Addr: srv.Addr, Key: "orders", RedisKey: "baton:{orders}", Mode: "unknown", ModeKeys: "none", Held: true,
		Holder: doc.Holder, TTLms: doc.TTLms, Token: doc.Token, Queue: []inspectedWaiter{},
	}, doc, "nobody waits: the keys of both modes are the same")
	require.NotNil(t, doc.Holder)
	require.Len(t, *doc.Holder, 8)
	require.NotNil(t, doc.TTLms)
	require.Greater(t, *doc.TTLms, int64(25_000))
	require.LessOrEqual(t, *doc.TTLms, int64(30_000))
	require.NotNil(t, doc.Token)
	require.Equal(t, ls.Token(), *doc.Token)

	require.NoError(t, ls.Unlock(context.Background()))
	require.Contains(t, runBaton(t, 30*time.Second, nil, "inspect", "--addr", srv.Addr, "orders").stdout, "free")
}

func TestInspectFreeLockSaysFreeAndChangesNoSetting(t *testing.T) {
	srv := redistest.Start(t)
	before := srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").String()
	for _, mode := range [][]string{nil, {"--fair"}} {
		r := runBaton(t, 30*time.Second, nil, append([]string{"inspect", "--addr", srv.Addr}, append(mode, "k")...)...)
		require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
		require.Contains(t, r.stdout, "nobody: the lock is free")
		require.NotContains(t, r.stdout, "fencing token")

		doc := inspectJSON(t, append([]string{"--addr", srv.Addr}, append(mode, "k")...)...)
		require.False(t, doc.Held)
		require.Nil(t, doc.Holder)
		require.Nil(t, doc.TTLms)
		require.Nil(t, doc.Token)
		require.False(t, doc.Wanted)
	}
	require.Equal(t, before, srv.Do(t, "CONFIG", "GET", "notify-keyspace-events").String(),
		"inspect must not turn on keyspace events")
	require.Zero(t, srv.Do(t, "DBSIZE").Int, "inspect writes nothing")
}

func TestInspectShowsTheFairQueueInOrder(t *testing.T) {
	srv := redistest.Start(t)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // should the test stop early: after the lockers close
	holder := openLocker(t, srv, lock.WithFair(), lock.WithKeyPrefix("app:"))
	held, err := holder.Lock(context.Background(), "line")
	require.NoError(t, err)
	got := make(chan *lock.Lease, 3)
	for i := range 3 {
		w := openLocker(t, srv, lock.WithFair(), lock.WithKeyPrefix("app:"))
		wg.Go(func() {
			ls, err := w.Lock(context.Background(), "line")
			assert.NoError(t, err)
			got <- ls
		})
		// The next waiter arrives only once this one is queued.
		redistest.Eventually(t, func() bool {
			info, err := holder.Inspect(context.Background(), "line")
			return err == nil && len(info.Queue) == i+1
		}, 5*time.Second, time.Millisecond)
	}

	doc := inspectJSON(t, "--addr", srv.Addr, "--fair", "--prefix", "app:", "line")
	require.Equal(t, "fair", doc.Mode)
	require.Equal(t, "app:{line}", doc.RedisKey)
	require.True(t, doc.Wanted)
	require.Equal(t, held.Token(), *doc.Token)
	require.Len(t, doc.Queue, 3)
	for _, w := range doc.Queue {
		require.Positive(t, w.LeaseLeftMs)
	}

	r := runBaton(t, 30*time.Second, nil, "inspect", "--addr", srv.Addr, "--fair", "--prefix", "app:", "line")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stdout, "asked to let go: yes\n")
	require.Contains(t, r.stdout, "3 waiting")
	at := -1
	for i, w := range doc.Queue {
		next := strings.Index(r.stdout, strconv.Itoa(i+1)+". "+w.Owner)
		require.Greater(t, next, at, "waiter %d in order:\n%s", i+1, r.stdout)
		at = next
	}

	// The queue shown is the order of the hand-offs.
	require.NoError(t, held.Unlock(context.Background()))
	for i, w := range doc.Queue {
		ls := <-got
		require.NotNil(t, ls)
		now := inspectJSON(t, "--addr", srv.Addr, "--fair", "--prefix", "app:", "line")
		require.Equal(t, w.Owner, *now.Holder, "waiter %d", i+1)
		require.Equal(t, ls.Token(), *now.Token)
		require.Len(t, now.Queue, 2-i)
		require.NoError(t, ls.Unlock(context.Background()))
	}
}

func TestInspectUsageAndServerErrors(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		code int
		says string
	}{
		"no --addr":         {[]string{"k"}, 2, "--addr is required"},
		"no KEY":            {[]string{"--addr", "127.0.0.1:1"}, 2, "missing KEY"},
		"two keys":          {[]string{"--addr", "127.0.0.1:1", "a", "b"}, 2, `unexpected argument "b"`},
		"--addr after KEY":  {[]string{"k", "--addr", "127.0.0.1:1"}, 1, "127.0.0.1:1"},
		"no server":         {[]string{"--addr", "127.0.0.1:1", "k"}, 1, "127.0.0.1:1"},
		"no server, --json": {[]string{"--json", "--addr", "127.0.0.1:1", "k"}, 1, "127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, append([]string{"inspect"}, c.args...)...)
			require.Equal(t, c.code, r.code, "stderr: %s", r.stderr)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			require.Contains(t, r.stderr, c.says)
			require.Empty(t, r.stdout)
		})
	}
}

// TestInspectHidesThePassword: the server inspect names, in the view and
// in the JSON document, has the password of its URL hidden.
func TestInspectHidesThePassword(t *testing.T) {
	srv := redistest.Start(t, redistest.WithConfig("requirepass s3cret-pw"))
	addr := "redis://:s3cret-pw@" + srv.Addr
	r := runBaton(t, 30*time.Second, nil, "inspect", "--addr", addr, "k")
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	require.NotContains(t, r.stdout, "s3cret-pw")
	require.Contains(t, r.stdout, " on redis://:xxxxx@"+srv.Addr+" ")
	require.Equal(t, "redis://:xxxxx@"+srv.Addr, inspectJSON(t, "--addr", addr, "k").Addr)
}

func TestInspectRefusesAKeyTheLockRefuses(t *testing.T) {
	srv := redistest.Start(t)
	r := runBaton(t, 30*time.Second, nil, "inspect", "--addr", srv.Addr, "}k")
	require.Equal(t, 2, r.code, "stderr: %s", r.stderr)
	require.Contains(t, r.stderr, "hash tag")
	require.Equal(t, 1, strings.Count(r.stderr, "\n"))
}

// TestInspectOnACluster reads a lock held on a Redis Cluster through a
// redis+cluster:// address, from the node that serves it.
func TestInspectOnACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	url := "redis+cluster://" + strings.Join(c.Seeds(), ",")
	l, err := lock.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	ls, err := l.Lock(context.Background(), "orders:42")
	require.NoError(t, err)
	doc := inspectJSON(t, "--addr", url, "orders:42")
	require.True(t, doc.Held)
	require.NotNil(t, doc.Token)
	require.Equal(t, ls.Token(), *doc.Token)
}

// TestInspectReadsFlagsAnywhere: inspect's flags may come before KEY,
// after it or on both sides; after "--", KEY may begin with "-"; and a
// flag's value is taken as it stands, even "--".
func TestInspectReadsFlagsAnywhere(t *testing.T) {
	srv := redistest.Start(t)
	for name, c := range map[string]struct {
		args          []string
		key, redisKey string
	}{
		"flags before KEY":       {[]string{"--addr", srv.Addr, "--json", "orders"}, "orders", "baton:{orders}"},
		"flags after KEY":        {[]string{"orders", "--addr", srv.Addr, "--json"}, "orders", "baton:{orders}"},
		"flags around KEY":       {[]string{"--json", "orders", "--prefix", "app:", "--addr", srv.Addr}, "orders", "app:{orders}"},
		"a KEY after --":         {[]string{"--addr", srv.Addr, "--json", "--", "-orders"}, "-orders", "baton:{-orders}"},
		"the KEY -":              {[]string{"-", "--addr", srv.Addr, "--json"}, "-", "baton:{-}"},
		"-- as a flag's value":   {[]string{"orders", "--prefix", "--", "--addr", srv.Addr, "--json"}, "orders", "--{orders}"},
		"--name=value after KEY": {[]string{"orders", "--addr=" + srv.Addr, "--json=true"}, "orders", "baton:{orders}"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runBaton(t, 30*time.Second, nil, append([]string{"inspect"}, c.args...)...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			doc := decodeInspected(t, r.stdout)
			require.Equal(t, srv.Addr, doc.Addr)
			require.Equal(t, c.key, doc.Key)
			require.Equal(t, c.redisKey, doc.RedisKey)
		})
	}
}

// modeStage is a lock as a test sets it up: its holder, of a mode or
// none, and the waiters it has, by mode.
type modeStage struct {
	holder  string   // "fast", "fair" or "" for a free lock
	waiters []string // "fast": a waiter that asked; "fair": one queued
}

// set sets key on srv up as s says, and returns once every waiter's key
// is there: a fast waiter's request, a fair waiter's place in the queue.
// The waiters wait until the test ends.
func (s modeStage) set(t *testing.T, srv *redistest.Server, key string) {
	t.Helper()
	modeOpts := func(mode string) []lock.Option {
		opts := []lock.Option{lock.WithTTL(30 * time.Second)}
		if mode == "fair" {
			opts = append(opts, lock.WithFair())
		}
		return opts
	}
	if s.holder != "" {
		_, err := openLocker(t, srv, modeOpts(s.holder)...).Lock(context.Background(), key)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // after the waiters' Lockers close, which ends their Lock
	for _, mode := range s.waiters {
		w := openLocker(t, srv, modeOpts(mode)...)
		wg.Go(func() {
			// A waiter that gets the lock lets it go; one that does not
			// fails when its Locker closes.
			if ls, err := w.Lock(context.Background(), key); err == nil {
				_ = ls.Unlock(context.Background())
			}
		})
	}
	for _, mode := range s.waiters {
		count, name := "LLEN", "baton:{"+key+"}:wanted"
		if mode == "fair" {
			count, name = "ZCARD", "baton:{"+key+"}:queue"
		}
		redistest.Eventually(t, func() bool { return srv.Do(t, count, name).Int == 1 }, 5*time.Second, time.Millisecond,
			"the %s waiter's key", mode)
	}
}

// TestInspectTellsTheModeFromTheKeys: without --fair, inspect reads the
// mode from the keys that only one mode keeps (a fast lock's requests, a
// fair lock's queue), and says so; where they tell nothing, or tell of
// both modes, it says that instead of guessing. --fair and --fair=false
// choose the mode, with a warning when the keys say otherwise.
func TestInspectTellsTheModeFromTheKeys(t *testing.T) {
	srv := redistest.Start(t)
	for i, c := range []struct {
		name  string
		stage modeStage
		flags []string
		// What the JSON document says: the mode, the keys, whether the
		// lock is asked for and the queue's length (-1: null).
		mode, keys string
		wanted     bool
		queue      int
		says       string // the view's mode line, or its start
		warns      bool
	}{
		{name: "a fast lock asked for", stage: modeStage{"fast", []string{"fast"}},
			mode: "fast", keys: "fast", wanted: true, queue: -1, says: "fast, as its keys tell"},
		{name: "a fair lock with a queue", stage: modeStage{"fair", []string{"fair"}},
			mode: "fair", keys: "fair", wanted: true, queue: 1, says: "fair, as its keys tell"},
		{name: "a fast lock nobody waits for", stage: modeStage{"fast", nil},
			mode: "unknown", keys: "none", queue: 0, says: "unknown: no key that only one mode keeps"},
		{name: "a fair lock nobody waits for", stage: modeStage{"fair", nil},
			mode: "unknown", keys: "none", queue: 0, says: "unknown: no key that only one mode keeps"},
		{name: "a free lock", stage: modeStage{"", nil},
			mode: "unknown", keys: "none", queue: 0, says: "unknown: no key that only one mode keeps"},
		{name: "keys of both modes", stage: modeStage{"fair", []string{"fast", "fair"}},
			mode: "unknown", keys: "both", wanted: true, queue: 1, says: "unknown: keys of both modes"},
		{name: "--fair on a fair lock", stage: modeStage{"fair", []string{"fair"}}, flags: []string{"--fair"},
			mode: "fair", keys: "fair", wanted: true, queue: 1, says: "fair, as --fair says\n"},
		{name: "--fair on a lock nobody waits for", stage: modeStage{"fast", nil}, flags: []string{"--fair"},
			mode: "fair", keys: "none", queue: 0, says: "fair, as --fair says\n"},
		{name: "--fair on a fast lock", stage: modeStage{"fast", []string{"fast"}}, flags: []string{"--fair"},
			mode: "fair", keys: "fast", queue: 0, says: "fair, as --fair says, but it has a list of requests, which only a fast lock keeps", warns: true},
		{name: "--fair=false on a fair lock", stage: modeStage{"fair", []string{"fair"}}, flags: []string{"--fair=false"},
			mode: "fast", keys: "fair", queue: -1, says: "fast, as --fair=false says, but it has a queue, which only a fair lock keeps", warns: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "k" + strconv.Itoa(i)
			c.stage.set(t, srv, key)
			args := append([]string{"inspect", key, "--addr", srv.Addr}, c.flags...)

			r := runBaton(t, 30*time.Second, nil, args...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			if c.mode == "unknown" {
				require.Contains(t, r.stdout, " (mode unknown)\n")
			} else {
				require.Contains(t, r.stdout, " ("+c.mode+" mode)\n")
			}
			require.Contains(t, r.stdout, "mode:            "+c.says)
			if c.stage.holder != "" {
				require.Contains(t, r.stdout, "asked to let go: "+map[bool]string{true: "yes", false: "no"}[c.wanted]+"\n")
			}
			requireWarning(t, c.warns, r.stderr)

			r = runBaton(t, 30*time.Second, nil, append(args, "--json")...)
			require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
			requireWarning(t, c.warns, r.stderr)
			doc := decodeInspected(t, r.stdout)
			require.Equal(t, c.mode, doc.Mode)
			require.Equal(t, c.keys, doc.ModeKeys)
			require.Equal(t, c.stage.holder != "", doc.Held)
			require.Equal(t, c.wanted, doc.Wanted)
			if c.queue < 0 {
				require.Nil(t, doc.Queue)
			} else {
				require.NotNil(t, doc.Queue)
				require.Len(t, doc.Queue, c.queue)
			}
		})
	}
}

// requireWarning checks stderr of an inspect that succeeded: one line of
// warning where the keys contradict the mode given, else nothing.
func requireWarning(t *testing.T, warns bool, stderr string) {
	t.Helper()
	if !warns {
		require.Empty(t, stderr)
		return
	}
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, "baton inspect: warning: ")
}
