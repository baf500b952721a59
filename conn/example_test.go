package conn_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/batonlock/baton/conn"
)

var redisAddr = "localhost:6379" // TestMain points it at a throwaway server

func ExampleDial() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, redisAddr, conn.WithClientName("worker-7"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	if _, err := c.Do(ctx, "SET", "greeting", "hello", "PX", "30000"); err != nil {
		log.Fatal(err)
	}
	v, err := c.Do(ctx, "GET", "greeting")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v.Str)
	// Output: hello
}

// ExampleConn_DoMulti sends PING and a command in one write, as the lock
// sends PING and its release. An error reply stays a value in the slice.
func ExampleConn_DoMulti() {
	ctx := context.Background()
	c, err := conn.Dial(ctx, redisAddr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	replies, err := c.DoMulti(ctx,
		[]string{"PING"},
		[]string{"INCR", "visits"},
		[]string{"LPUSH", "visits", "x"})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range replies {
		fmt.Println(r)
	}
	// Output:
	// PONG
	// 1
	// (error) WRONGTYPE Operation against a key holding the wrong kind of value
}

// ExampleWithTap shows the bytes of a PING and its reply on the wire.
func ExampleWithTap() {
	ctx := context.Background()
	var mu sync.Mutex
	wire := make(map[conn.Direction][]byte)
	tap := func(dir conn.Direction, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		wire[dir] = append(wire[dir], p...) // p is not ours to keep: copy it
	}
	c, err := conn.Dial(ctx, redisAddr, conn.WithTap(tap))
	if err != nil {
		log.Fatal(err)
	}

	if _, err := c.Do(ctx, "PING"); err != nil {
		log.Fatal(err)
	}
	// Close waits for the connection's goroutines, and so for the tap.
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}

	fmt.Printf("wrote %q\n", wire[conn.Write])
	fmt.Printf("read  %q\n", wire[conn.Read])
	// Output:
	// wrote "*1\r\n$4\r\nPING\r\n"
	// read  "+PONG\r\n"
}
