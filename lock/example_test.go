package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strconv"
	"sync"
	"time"

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

	// Stop once the lease has ended (released, lost, or run out), and hand
	// the fencing token to the resource the lock protects: it refuses writes
	// carrying a token lower than one it has seen, so a holder that lost the
	// lock unawares cannot overwrite a later holder's work.
	select {
	case <-lease.Done():
		log.Fatal("lease lost")
	default:
	}
	if err := orders.Write(lease.Token(), "42", "shipped"); err != nil {
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

// orders stands for the resource a lock protects, in the examples: a store
// that refuses writes carrying a fencing token lower than the highest it has
// seen.
var orders = &orderStore{byID: make(map[string]string)}

type orderStore struct {
	mu    sync.Mutex
	fence uint64 // the highest fencing token seen
	byID  map[string]string
}

func (s *orderStore) Write(token uint64, id, status string) error {
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
