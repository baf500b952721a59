package lock_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/batonlock/baton/lock"
	"github.com/batonlock/baton/observe"
)

// printer prints what a Locker tells it, one event a line.
type printer struct{}

func (printer) Observe(e observe.Event) {
	switch e.Kind {
	case observe.CallBegan:
		fmt.Println(e.Kind, e.Op, e.Key)
	case observe.LeaseGranted, observe.CallEnded:
		fmt.Println(e.Kind, e.How)
	case observe.LeaseEnded:
		fmt.Println(e.Kind, e.Reason)
	default:
		fmt.Println(e.Kind)
	}
}

// ExampleWithObserver prints the events of a Lock and an Unlock. An
// observer is called from a goroutine of the Locker's, and Close
// delivers what is queued before it returns.
func ExampleWithObserver() {
	ctx := context.Background()
	l, err := lock.Open(ctx, redisAddr, lock.WithObserver(printer{}))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := l.Lock(ctx, "observed")
	if err != nil {
		log.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	l.Close()
	// Output:
	// call began lock observed
	// lease granted free
	// call ended free
	// lease ended released
}

// ExampleWithLogger logs a lease that ran out while its holder still
// held it: what no caller hears of as an error.
func ExampleWithLogger() {
	ctx := context.Background()
	quiet := func(_ []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey, "token", "duration": // different at every run
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: quiet}))
	l, err := lock.Open(ctx, redisAddr, lock.WithTTL(50*time.Millisecond), lock.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := l.Lock(ctx, "report:daily")
	if err != nil {
		log.Fatal(err)
	}
	<-lease.Done() // the holder overran its TTL
	l.Close()
	// Output:
	// level=WARN msg="baton: lease ended" key=report:daily reason=expired
}
