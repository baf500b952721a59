package lock

import (
	"context"

	"github.com/batonlock/baton/subscriber"
)

// Wanted is closed when another owner asks for the lock while this lease
// holds it: in fast mode a Lock that found it held (its request stands
// until it acquires or gives up), in fair mode a waiter that queued. A
// holder that keeps the lock between pieces of work (package manager's
// hold) lets go when it closes. A request that stood before Wanted was
// first called closes it at once. It never closes after the lease ended.
func (ls *Lease) Wanted() <-chan struct{} {
	done := ls.Done()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.wanted != nil {
		return ls.wanted
	}
	wanted := make(chan struct{})
	ls.wanted = wanted
	if ls.state == held {
		ls.c.l.spawn(func() { ls.watchWanted(done, wanted) })
	}
	return wanted
}

// watchWanted closes wanted when a request is heard on the lock's wanted
// channel, or found standing once the subscription is in place, until the
// lease ends or the Locker closes.
func (ls *Lease) watchWanted(done <-chan struct{}, wanted chan struct{}) {
	c, l := &ls.c, ls.c.l
	var w *subscriber.Waiter
	err := c.listen(l.bgCtx, func(sub *subscriber.Subscriber) (err error) {
		w, err = c.watchRequests(l.bgCtx, sub)
		return err
	})
	if err != nil {
		return // the Locker is closing, or the key's node is unreachable
	}
	defer w.Close()
	if ls.requestStands() {
		close(wanted)
		return
	}
	select {
	case <-w.Wake():
		close(wanted)
	case <-done:
	case <-l.bgCtx.Done():
	}
}

// requestStands reads whether another owner's request stands.
func (ls *Lease) requestStands() bool {
	c, l := &ls.c, ls.c.l
	if l.opts.Fair {
		v, err := c.cmd.Do(l.bgCtx, "ZCARD", c.names.queue)
		return err == nil && v.Int > 0
	}
	// Two requests at most: one of them is not the holder's own.
	v, err := c.cmd.Do(l.bgCtx, "LRANGE", c.names.wanted, "0", "1")
	if err != nil {
		return false
	}
	for _, r := range v.Elems {
		if !hasOwner(r.Str, c.owner) {
			return true
		}
	}
	return false
}

// hasOwner reports whether a request "<owner> <waiter-id> <channel>" is
// owner's.
func hasOwner(request, owner string) bool {
	return len(request) > len(owner) && request[:len(owner)] == owner && request[len(owner)] == ' '
}

// watchRequests registers a waiter for requests on the lock (its wanted
// channel), on a shard channel or a plain one as the Locker publishes.
func (c *claim) watchRequests(ctx context.Context, sub *subscriber.Subscriber) (*subscriber.Waiter, error) {
	return sub.Watch(ctx, subscriber.Topic{Channel: c.names.wanted, Shard: c.l.sharded})
}
