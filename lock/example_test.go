package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/lock"
)

var redisAddr = "localhost:6379" // TestMain points it at a throwaway server

// Example takes a lock, writes under it with the lease's fencing token,
// and lets it go.
func Example() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr, lock.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "orders:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)

	// Work under the lease's context: it ends the moment the lease does
	// (released, lost on the server, or run out), and context.Cause says
	// why. Hand the fencing token to the resource the lock protects: it
	// refuses writes carrying a token lower than one it has seen, so a
	// holder that lost the lock unawares cannot overwrite a later holder's
	// work.
	work := lease.Context(ctx)
	if err := orders.Write(work, lease.Token(), "42", "shipped"); err != nil {
		log.Fatal(err)
	}

	fmt.Println("order 42:", orders.Read("42"))
	// Output: order 42: shipped
}

// ExampleLocker_TryLock makes one attempt, and tells a lock held by someone
// else from a failure.
func ExampleLocker_TryLock() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.TryLock(ctx, "invoices:7")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)

	// A second attempt finds the lock held (a Locker's leases are not
	// reentrant: it might as well come from another process).
	_, err = l.TryLock(ctx, "invoices:7")
	if errors.Is(err, lock.ErrNotAcquired) {
		fmt.Println("invoices:7 is busy, try later")
	}
	// Output: invoices:7 is busy, try later
}

// ExampleWithFair hands the lock over in the order waiters asked for it.
func ExampleWithFair() {
	ctx := context.Background()
	// Every Locker of a key must use the same mode.
	l, err := lock.Open(ctx, redisAddr, lock.WithFair())
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "printer")
	if err != nil {
		log.Fatal(err)
	}

	// Another worker (in any process) queues for the lock.
	next := make(chan *lock.Lease)
	go func() {
		lease, err := l.Lock(ctx, "printer")
		if err != nil {
			log.Fatal(err)
		}
		next <- lease
	}()
	<-lease.Wanted() // closed once the worker has queued

	// The release hands the lock to the head of the queue: the releaser
	// cannot take it back.
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = l.TryLock(ctx, "printer")
	fmt.Println("taken back:", !errors.Is(err, lock.ErrNotAcquired))

	handed := <-next
	fmt.Println("newer token:", handed.Token() > lease.Token())
	if err := handed.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// taken back: false
	// newer token: true
}

// ExampleLease_Done stops work when the lease ends, here because its TTL
// ran out.
func ExampleLease_Done() {
	ctx := context.Background()
	// Nobody extends these leases (see WithAutoExtend and Lease.Extend):
	// each ends 200ms after its acquire.
	l, err := lock.Open(ctx, redisAddr, lock.WithTTL(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "reports:daily")
	if err != nil {
		log.Fatal(err)
	}
	// Work in steps, and stop once the lease ends: past that, another owner
	// may hold the lock.
	for {
		select {
		case <-lease.Done():
			fmt.Println("lease ended, work stopped")
			err := lease.Unlock(ctx)
			fmt.Println("not held:", errors.Is(err, lock.ErrNotHeld))
			return
		case <-time.After(20 * time.Millisecond): // one step of the work
		}
	}
	// Output:
	// lease ended, work stopped
	// not held: true
}

// ExampleLease_Context stops work under the lock the moment the lock is
// lost: here another client deletes it, as an operator might by mistake.
// The server tells the lease's Subscriber at once, and the lease's
// context ends with the reason as its cause.
func ExampleLease_Context() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "reports:daily")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)
	work := lease.Context(ctx)

	deleteKey(l.Key("reports:daily")) // someone else's mistake

	<-work.Done() // work under the lock stops here, within milliseconds
	cause := context.Cause(work)
	fmt.Println(cause)
	fmt.Println("lost:", errors.Is(cause, lock.ErrLost))
	// Output:
	// lock: lost on the server: its key was removed
	// lost: true
}

// deleteKey deletes key from another connection, as another client would.
func deleteKey(key string) {
	c, err := conn.Dial(context.Background(), redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(context.Background(), "DEL", key); err != nil {
		log.Fatal(err)
	}
}

// orders stands for the resource a lock protects, in the examples: a store
// that refuses writes carrying a fencing token lower than the highest it has
// seen.
var orders = &orderStore{byID: make(map[string]string)}

type orderStore struct {
	mu    sync.Mutex
	fence uint64 // the highest fencing token seen
	byID  map[string]string
}

func (s *orderStore) Write(ctx context.Context, token uint64, id, status string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("order %s: %w", id, context.Cause(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.fence {
		return fmt.Errorf("order %s: stale fencing token %d < %d", id, token, s.fence)
	}
	s.fence = token
	s.byID[id] = status
	return nil
}

func (s *orderStore) Read(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// ExampleLease_Commit keeps a counter beside a lock: LockAndDo reads it in
// the acquire's own write, and Commit writes it back only if the lease
// still owns the lock, releasing the lock in the same script. A holder
// that lost the lock (paused past its TTL, say) writes nothing and gets
// ErrNotHeld.
func ExampleLease_Commit() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// The state shares the lock's hash tag: on a Redis Cluster it lives in
	// the lock's slot, where the lock's scripts may write it.
	visits := l.Key("page:home") + ":visits"
	for range 3 {
		lease, replies, err := l.LockAndDo(ctx, "page:home", []string{"GET", visits})
		if err != nil {
			log.Fatal(err)
		}
		n := 0 // a missing key is a null reply
		if !replies[0].IsNull() {
			if n, err = strconv.Atoi(replies[0].Str); err != nil {
				log.Fatal(err)
			}
		}
		w := lock.Write{Key: visits, Value: strconv.Itoa(n + 1), TTL: time.Hour, Unlock: true}
		if _, err := lease.Commit(ctx, w); err != nil {
			log.Fatal(err)
		}
	}

	// Inspect reads it without the lock, with the lock's own state.
	info, err := l.Inspect(ctx, "page:home", []string{"GET", visits})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("visits:", info.Replies[0].Str)
	// Output: visits: 3
}

// ExampleWithKeyspaceEventsConfigured opens a fast-mode Locker where the
// server refuses CONFIG, as many managed services do: the operator has set
// notify-keyspace-events, and the option says so. WithReleaseTimeout gives
// releases longer to ride out a failover.
func ExampleWithKeyspaceEventsConfigured() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr,
		lock.WithKeyspaceEventsConfigured(),
		lock.WithReleaseTimeout(15*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "reports:daily")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", lease.Unlock(ctx) == nil)
	// Output: held: true
}

// ExampleLocker_LockAndDo resumes a batch job from the cursor its last run
// left beside the lock. LockAndDo reads the cursor in the acquire's own
// write, so a run learns where to start without a round trip of its own,
// and no other run can move the cursor between the acquire and the read.
func ExampleLocker_LockAndDo() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	// Named after the lock (Locker.Key), the cursor shares its hash tag,
	// and so its node on a Redis Cluster.
	cursor := l.Key("jobs:reindex") + ":cursor"
	for run := 1; run <= 2; run++ {
		lease, replies, err := l.LockAndDo(ctx, "jobs:reindex", []string{"GET", cursor})
		if err != nil {
			log.Fatal(err)
		}
		from := 0 // the first run finds no cursor: a null reply
		if !replies[0].IsNull() {
			if from, err = strconv.Atoi(replies[0].Str); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Printf("run %d starts at item %d\n", run, from)

		// ... reindex items from to from+100 ...

		// Store the new cursor and let go, in one script that writes only
		// if the lease still owns the lock.
		w := lock.Write{Key: cursor, Value: strconv.Itoa(from + 100), TTL: 24 * time.Hour, Unlock: true}
		if _, err := lease.Commit(ctx, w); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// run 1 starts at item 0
	// run 2 starts at item 100
}

// ExampleLocker_Inspect looks at a lock from outside, as an operator's tool
// would: who holds it, with which fencing token, and whether anyone waits.
// Inspect takes no lock and writes nothing.
func ExampleLocker_Inspect() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "reports:weekly")
	if err != nil {
		log.Fatal(err)
	}
	info, err := l.Inspect(ctx, "reports:weekly")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", info.Held)
	fmt.Println("holder's token:", info.Token == lease.Token())
	fmt.Println("TTL at most 10s:", info.TTL > 0 && info.TTL <= 10*time.Second)
	fmt.Println("wanted:", info.Wanted)

	// Another worker asks for the lock.
	done := make(chan error)
	go func() {
		next, err := l.Lock(ctx, "reports:weekly")
		if err == nil {
			err = next.Unlock(ctx)
		}
		done <- err
	}()
	<-lease.Wanted() // closed once the worker has asked
	if info, err = l.Inspect(ctx, "reports:weekly"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wanted:", info.Wanted)

	if err := lease.Unlock(ctx); err != nil { // hands the lock to the worker
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// held: true
	// holder's token: true
	// TTL at most 10s: true
	// wanted: false
	// wanted: true
}

// ExampleWrite keeps a lock across several writes of the state it guards.
// A Commit without Unlock writes only while the lease owns the lock, and
// extends the lock in the same script; IfExists refuses to write a copy
// that went stale because the stored value expired meanwhile.
func ExampleWrite() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "account:42")
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)

	balance := l.Key("account:42") + ":balance"
	held, err := lease.Commit(ctx, lock.Write{Key: balance, Value: "100", TTL: 50 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("still held:", held) // nobody else asked for it

	time.Sleep(100 * time.Millisecond) // the balance expires meanwhile

	// The holder's copy of the balance is stale now: write over it only if
	// the stored value is still there.
	held, err = lease.Commit(ctx, lock.Write{Key: balance, Value: "90", TTL: time.Hour, IfExists: true})
	fmt.Println("stale write refused:", errors.Is(err, lock.ErrStateMissing))
	fmt.Println("still held:", held)
	// Output:
	// still held: true
	// stale write refused: true
	// still held: true
}

// ExampleWithReleaseTimeout gives releases that go on in the background
// longer to finish: a longer timeout rides out a longer outage (a failover,
// say) instead of leaving the lock to its TTL, and a shorter one lets Close
// return sooner from a server that is gone.
func ExampleWithReleaseTimeout() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr, lock.WithReleaseTimeout(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "reports:monthly")
	if err != nil {
		log.Fatal(err)
	}

	// A caller that gives up on its Unlock (its request was cancelled)
	// is told so, but the release goes on in the background, for up to
	// the release timeout: the lock is not left held until its TTL.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = lease.Unlock(cancelled)
	fmt.Println("unlock cancelled:", errors.Is(err, context.Canceled))

	next, err := l.Lock(ctx, "reports:monthly") // free again, well before the TTL
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("taken again:", next.Unlock(ctx) == nil)
	// Output:
	// unlock cancelled: true
	// taken again: true
}

// ExampleWithQueueLease shortens how long a fair waiter keeps its place
// without renewing it: a waiter that stalls (its process stopped but did
// not die) is skipped sooner, at the cost of more renewals from every
// waiter, which renew every third of the lease.
func ExampleWithQueueLease() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr, lock.WithFair(), lock.WithQueueLease(600*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "scanner")
	if err != nil {
		log.Fatal(err)
	}

	// Another worker queues for the lock.
	done := make(chan error)
	go func() {
		next, err := l.Lock(ctx, "scanner")
		if err == nil {
			err = next.Unlock(ctx)
		}
		done <- err
	}()
	<-lease.Wanted() // closed once the worker has queued

	info, err := l.Inspect(ctx, "scanner")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("queued:", len(info.Queue))
	fmt.Println("place kept for at most 600ms:", info.Queue[0].LeaseLeft <= 600*time.Millisecond)

	if err := lease.Unlock(ctx); err != nil { // hands the lock to the worker
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// queued: 1
	// place kept for at most 600ms: true
}

// ExampleWithFenceRetention keeps the fencing counters of locks used once
// (one per imported file, here) for a minute instead of an hour, so that
// fewer keys are left behind them. Tokens keep increasing after a counter
// is gone, since they never fall below the server's clock; the counter
// guards them against that clock being set back, as far back as the
// retention.
func ExampleWithFenceRetention() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr, lock.WithFenceRetention(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	lease, err := l.Lock(ctx, "import:2024-06-01.csv")
	if err != nil {
		log.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// The counter lives at <prefix>{key}:fence.
	fence := l.Key("import:2024-06-01.csv") + ":fence"
	info, err := l.Inspect(ctx, "import:2024-06-01.csv", []string{"PTTL", fence})
	if err != nil {
		log.Fatal(err)
	}
	left := time.Duration(info.Replies[0].Int) * time.Millisecond
	fmt.Println("held:", info.Held)
	fmt.Println("counter gone within a minute:", left > 0 && left <= time.Minute)
	// Output:
	// held: false
	// counter gone within a minute: true
}

// ExampleWithEvictionAllowed opens a Locker on a server whose
// maxmemory-policy may evict keys, which Open refuses by default: such a
// server can evict a held lock to make room, and a second owner then takes
// it while the first lease is open. Accept that only where nothing but locks
// and short-lived data live on the server, or, as here, for a tool that only
// reads.
func ExampleWithEvictionAllowed() {
	ctx := context.Background()

	// For this example, make the server a cache that evicts.
	admin, err := conn.Dial(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Do(ctx, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru"); err != nil {
		log.Fatal(err)
	}
	defer admin.Do(ctx, "CONFIG", "SET", "maxmemory-policy", "noeviction")

	_, err = lock.Open(ctx, redisAddr)
	fmt.Println("refused:", errors.Is(err, lock.ErrInvalid))

	l, err := lock.Open(ctx, redisAddr, lock.WithEvictionAllowed())
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	info, err := l.Inspect(ctx, "reports:daily")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reports:daily held:", info.Held)
	// Output:
	// refused: true
	// reports:daily held: false
}

// ExampleWithReplicaAck makes every acquire wait until a replica has
// acknowledged it, so that a failover to that replica keeps the lock. It
// costs a round trip to the replicas on every acquire, extension, write-back
// and release, and it is no consensus: pass the fencing token on where
// that matters. Here the server has no replica: the acquire is undone, and
// Lock fails with ErrNotAcquired once the 50ms timeout has passed.
func ExampleWithReplicaAck() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr,
		lock.WithReplicaAck(1, 50*time.Millisecond),
		// Undoing the acquire is a release, which no replica acknowledges
		// either: it is sent again in the background for up to the release
		// timeout, and Close waits for it. A second here, not the default 5s.
		lock.WithReleaseTimeout(time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	_, err = l.Lock(ctx, "payments:batch")
	fmt.Println("not acquired:", errors.Is(err, lock.ErrNotAcquired))

	info, err := l.Inspect(ctx, "payments:batch")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held:", info.Held)
	// Output:
	// not acquired: true
	// held: false
}
