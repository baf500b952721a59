package subscriber

import (
	"strconv"
	"strings"

	"github.com/batonlock/baton/resp"
)

// keyspaceChannels begins the name of every keyspace channel, whatever its
// database. onPush tests for it rather than for the Subscriber's own
// keyspacePrefix, which New learns only once the reader goroutine that runs
// onPush has started. The Subscriber subscribes to keyspace channels of
// its own database alone, so the two tests differ only for a channel that
// WatchChannel was given, and a message on any keyspace channel names an
// event all the same.
const keyspaceChannels = "__keyspace@"

// onPush handles a push frame on the connection's reader goroutine, from
// the first dial on. It only signals waiters and runs OnRelease hooks,
// which must not block, so it never blocks; it reads only the fields that
// New sets before the first dial, and the ones that s.mu guards.
func (s *Subscriber) onPush(v resp.Value) {
	if len(v.Elems) != 3 || v.Elems[0].Str != "message" {
		return // subscribe confirmations and other kinds
	}
	channel, payload := v.Elems[1].Str, v.Elems[2].Str
	if channel == s.channel {
		// "<id>" or "<id> <message>"
		idText, message, _ := strings.Cut(payload, " ")
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil {
			return // not ours to understand
		}
		s.mu.Lock()
		if w := s.directed[id]; w != nil {
			w.message = message
			w.signal()
		}
		s.mu.Unlock()
		return
	}
	if strings.HasPrefix(channel, keyspaceChannels) {
		switch payload {
		case "del", "expired", "evicted":
		default:
			return // the key changed but was not released
		}
	}
	s.mu.Lock()
	w := s.wakeNextLocked(channel)
	var hook func()
	if w != nil {
		hook = w.onRelease
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
}
