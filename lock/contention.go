package lock

import (
	"sync"
	"time"
)

// contendedFor is how long after one of its releases handed a lock on a
// Locker takes the lock for contended.
const contendedFor = time.Second

// maxRemembered bounds the locks that contention remembers: past it, the
// stale ones go, and if none is stale, all do (a Lock then only fails its
// first attempt, as on a lock it never saw).
const maxRemembered = 4096

// contention remembers the locks that a Locker's releases handed on
// lately: a Lock of one asks at its first attempt. In a tight loop of Lock
// and Unlock on a contended lock, the waiters have asked, and the next
// Lock would otherwise only fail first.
type contention struct {
	mu       sync.Mutex
	handOffs map[string]time.Time // guarded by mu: lock name -> when a release handed it on
}

func (c *contention) handedOn(lockName string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handOffs == nil {
		c.handOffs = make(map[string]time.Time)
	}
	if _, ok := c.handOffs[lockName]; !ok && len(c.handOffs) >= maxRemembered {
		for name, at := range c.handOffs {
			if now.Sub(at) >= contendedFor {
				delete(c.handOffs, name)
			}
		}
		if len(c.handOffs) >= maxRemembered {
			clear(c.handOffs)
		}
	}
	c.handOffs[lockName] = now
}

// lately reports whether a release handed lockName on within contendedFor.
func (c *contention) lately(lockName string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.handOffs[lockName]
	if ok && time.Since(at) >= contendedFor {
		delete(c.handOffs, lockName)
		return false
	}
	return ok
}
