package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/internal/keyevents"
	"github.com/batonlock/baton/resp"
)

// Counting is how a run counts the modifications that passed B.
type Counting string

const (
	// ServerOrder counts A's writes that Redis ran after B's request for
	// the lock and before B's own write, as one subscriber heard them:
	// keyspace events of the state key and the lock's request messages,
	// which Redis queues in the order it ran their commands.
	ServerOrder Counting = "server order"
	// FromCall counts A's writes that B's write found beyond those A had
	// finished when B called Modify, for servers that publish no keyspace
	// events. It can count the one write A was making at B's call, which
	// the server's order might not.
	FromCall Counting = "from B's call"
)

// PrepareCounting picks the counting a server allows. ServerOrder needs
// keyspace events for string writes ("$", or "A", with "K"); where they
// are off and CONFIG is allowed, it turns "$" on, and restore puts the
// setting back. Servers without keyspace events get FromCall.
func PrepareCounting(ctx context.Context, addr string) (counting Counting, restore func(), err error) {
	restore = func() {}
	c, err := conn.Dial(ctx, addr)
	if err != nil {
		return "", restore, err
	}
	defer c.Close()
	v, err := c.Do(ctx, "CONFIG", "GET", "notify-keyspace-events")
	if err != nil || len(v.Elems) != 2 {
		// CONFIG refused (or an embedded server without it): whatever the
		// server publishes, only the requests can be told apart for sure.
		return FromCall, restore, nil
	}
	flags := v.Elems[1].Str
	missing := keyevents.Missing(flags, "K$")
	if missing == "" {
		return ServerOrder, restore, nil
	}
	if _, err := c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", flags+missing); err != nil {
		return FromCall, restore, nil
	}
	restore = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c, err := conn.Dial(ctx, addr); err == nil {
			// The lock may have added flags of its own meanwhile: keep
			// those, drop only the "$" added here.
			if v, err := c.Do(ctx, "CONFIG", "GET", "notify-keyspace-events"); err == nil && len(v.Elems) == 2 && !strings.Contains(flags, "$") {
				_, _ = c.Do(ctx, "CONFIG", "SET", "notify-keyspace-events", strings.ReplaceAll(v.Elems[1].Str, "$", ""))
			}
			_ = c.Close()
		}
	}
	return ServerOrder, restore, nil
}

// serverOrder watches, in the order Redis runs them, the writes of the
// state of one token and the requests for its lock: a keyspace event per
// write, and a message on the lock's wanted channel per request (every
// failed Lock attempt in fast mode, every new queue entry in fair mode).
// Redis queues both for one subscriber in the order it runs the commands
// that cause them, so the count of writes heard before B's first request
// is the state B's request found.
type serverOrder struct {
	c                           *conn.Conn
	stateChannel, wantedChannel string

	mu        sync.Mutex
	writes    int // guarded by mu: state writes heard
	atRequest int // guarded by mu: writes heard before the first request, or -1
}

func watchServerOrder(ctx context.Context, addr, stateKey, wantedChannel string) (*serverOrder, error) {
	o := &serverOrder{wantedChannel: wantedChannel, atRequest: -1}
	c, err := conn.Dial(ctx, addr, conn.WithRESP3(), conn.WithPushHandler(o.heard))
	if err != nil {
		return nil, err
	}
	o.c = c
	o.stateChannel = fmt.Sprintf("__keyspace@%d__:%s", c.DB(), stateKey)
	if err := c.DoPush(ctx, "SUBSCRIBE", o.stateChannel, o.wantedChannel); err != nil {
		_ = c.Close()
		return nil, err
	}
	return o, nil
}

func (o *serverOrder) close() { _ = o.c.Close() }

// heard runs on the connection's reader goroutine.
func (o *serverOrder) heard(v resp.Value) {
	if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case v.Elems[1].Str == o.stateChannel && v.Elems[2].Str == "set":
		o.writes++
	case v.Elems[1].Str == o.wantedChannel && o.atRequest < 0:
		o.atRequest = o.writes
	}
}

// eventWait bounds how long the events up to B's own write may take to
// arrive after B's Modify returned.
const eventWait = 10 * time.Second

// passed is how many writes came after the first request and before the
// write of the state B's function saw, seen (which is that many writes),
// once the events up to B's own write have arrived.
func (o *serverOrder) passed(ctx context.Context, seen int) (int, error) {
	deadline := time.Now().Add(eventWait)
	for {
		o.mu.Lock()
		writes, atRequest := o.writes, o.atRequest
		o.mu.Unlock()
		if writes > seen {
			if atRequest < 0 || atRequest > seen {
				return 0, nil // B's first attempt found the lock free
			}
			return seen - atRequest, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("heard %d of the state's %d writes within %v", writes, seen+1, eventWait)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
