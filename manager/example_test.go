package manager_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/manager"
)

var redisAddr = "localhost:6379" // TestMain points it at a throwaway server

// Example keeps a shopping cart per session, changed under the session's
// lock by any number of instances.
func Example() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	type Session struct{ Cart []string }
	sessions := manager.New[Session](l)
	defer sessions.Close()

	// Each Modify reads the state under the lock, lets fn change it and
	// writes it back before it lets go: no update is lost.
	for _, sku := range []string{"sku-1", "sku-2"} {
		err := sessions.Modify(ctx, "session:7f3a", func(s *Session) error {
			s.Cart = append(s.Cart, sku)
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	s, err := sessions.Get(ctx, "session:7f3a")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Cart)
	// Output: [sku-1 sku-2]
}

// ExampleWithHold keeps a token's lock between back-to-back modifications,
// which then cost one round trip each. Every Modify still writes before it
// returns, and the hold lets go as soon as another instance asks.
func ExampleWithHold() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	type Counter struct{ N int }
	counters := manager.New[Counter](l, manager.WithHold(50*time.Millisecond))
	defer counters.Close()

	for range 100 {
		err := counters.Modify(ctx, "page:home", func(c *Counter) error {
			c.N++
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	c, err := counters.Get(ctx, "page:home")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.N)
	// Output: 100
}
