package subscriber

import (
	"strconv"
	"strings"

	"github.com/batonlock/baton/resp"
)

// onPush handles a push frame on the connection's reader goroutine. It only
// signals waiters, so it never blocks.
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
	if strings.HasPrefix(channel, s.keyspacePrefix) {
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
