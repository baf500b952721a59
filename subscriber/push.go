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
// a Topic.Channel names, and a message on any keyspace channel names an
// event all the same.
const keyspaceChannels = "__keyspace@"

// onPush handles a push frame on the connection's reader goroutine, from
// the first dial on. It only signals waiters and runs OnRelease hooks,
// which must not block, so it never blocks; it reads only the fields that
// New sets before the first dial, and the ones that s.mu guards.
func (s *Subscriber) onPush(v resp.Value) {
	if len(v.Elems) == 2 && v.Elems[0].Str == "invalidate" {
		s.onInvalidate(v.Elems[1])
		return
	}
	if len(v.Elems) != 3 {
		return
	}
	kind, channel, payload := v.Elems[0].Str, v.Elems[1].Str, v.Elems[2].Str
	switch {
	case kind == "sunsubscribe":
		s.onShardUnsubscribe(channel)
		return
	case kind == "smessage" && s.shardKind(channel) == shardDirected,
		kind == "message" && channel == s.channel:
		s.onDirected(channel, payload)
		return
	case kind != "message" && kind != "smessage":
		return // subscribe confirmations and other kinds
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

// onDirected wakes the directed waiter a message names: "<id>" or
// "<id> <text>", the text handed to the waiter's OnMessage first. A
// directed waiter on a shard channel hears only the messages on its own
// channel.
func (s *Subscriber) onDirected(channel, payload string) {
	idText, text, _ := strings.Cut(payload, " ")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil {
		return // not ours to understand
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.directed[id]
	if w == nil || (channel != s.channel && w.key != channel) {
		return
	}
	if w.onMessage != nil {
		w.onMessage(text)
	}
	w.signal()
}

// shardKind returns what a shard channel's messages do; a channel that is
// not a shard channel reads as shardWakeNext.
func (s *Subscriber) shardKind(channel string) shardKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shard[channel]
}

// onShardUnsubscribe handles a sunsubscribe frame. The Subscriber's own
// SUNSUBSCRIBE is confirmed by one too, but it forgets the subscription
// before it sends the command; a frame for a channel it still takes as
// subscribed comes from the server, which ends the shard channels of a
// slot that leaves the node. Their waiters are woken, to find where the
// slot went: the channel is not subscribed again here.
func (s *Subscriber) onShardUnsubscribe(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.subscribed[channel] {
		return
	}
	delete(s.subscribed, channel)
	for _, w := range s.keys[channel] {
		w.signal()
	}
}
