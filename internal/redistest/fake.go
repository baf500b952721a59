package redistest

import (
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
)

// Fake is a scripted RESP server on a loopback port: each connection it
// accepts is handed to a handler that reads commands and writes whatever
// bytes the test wants, including ones no real server would send. It is for
// faults: replies that never come, connections cut mid-exchange, garbage.
type Fake struct {
	Addr string // 127.0.0.1:port

	t        testing.TB
	handler  func(*Session)
	ln       net.Listener
	closed   chan struct{} // closed first thing in Close
	accepted atomic.Int64
	// wg counts the accept loop and every handler goroutine; Close waits
	// for it. Handlers are added by the accept loop while it is itself
	// counted, so Add never races with Wait at zero.
	wg sync.WaitGroup

	mu       sync.Mutex
	sessions map[*Session]struct{} // open connections; guarded by mu
	done     bool                  // Close has begun; guarded by mu
}

// NewFake listens on 127.0.0.1:0 and runs handler in a goroutine of its own
// for each connection accepted, closing the connection when handler
// returns. At t.Cleanup it closes the listener and every connection and
// waits for all its goroutines, so a handler blocked reading returns; a
// handler must not block on anything else the Fake cannot interrupt.
// Handlers report problems with t.Errorf, never t.Fatal, which is only
// allowed on the test's goroutine; a handler that panics fails the test.
func NewFake(t testing.TB, handler func(s *Session)) *Fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: fake listen: %v", err)
	}
	f := &Fake{
		Addr:     ln.Addr().String(),
		t:        t,
		handler:  handler,
		ln:       ln,
		closed:   make(chan struct{}),
		sessions: make(map[*Session]struct{}),
	}
	f.wg.Add(1)
	go f.acceptLoop()
	t.Cleanup(f.Close)
	return f
}

// Accepted returns how many connections the fake has accepted so far.
func (f *Fake) Accepted() int { return int(f.accepted.Load()) }

// Close stops accepting, closes every connection and waits until every
// handler has returned. It is called at t.Cleanup; a test may call it
// earlier to make the server vanish, but not from a handler, which Close
// would wait for. Calling it again does nothing more.
func (f *Fake) Close() {
	f.mu.Lock()
	if f.done {
		f.mu.Unlock()
		f.wg.Wait()
		return
	}
	f.done = true
	// Closed before any connection, so that a handler whose read fails
	// can tell that the fake closed it, not the client.
	close(f.closed)
	for s := range f.sessions {
		s.conn.Close()
	}
	f.mu.Unlock()
	f.ln.Close()
	f.wg.Wait()
}

func (f *Fake) acceptLoop() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			// The listener is closed by Close, or broken; either way
			// nothing more will connect.
			return
		}
		f.accepted.Add(1)
		s := newSession(f, c)
		f.mu.Lock()
		if f.done {
			// Close has already swept the connections: this one would
			// be missed.
			f.mu.Unlock()
			c.Close()
			return
		}
		f.sessions[s] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go f.serve(s)
	}
}

// serve runs the handler for one connection, then closes it.
func (f *Fake) serve(s *Session) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.sessions, s)
		f.mu.Unlock()
		s.conn.Close()
	}()
	// A panic here would kill the whole test binary, taking every other
	// test's report with it; fail this test instead.
	defer func() {
		if r := recover(); r != nil {
			f.t.Errorf("redistest: fake handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	f.handler(s)
}

// isClosed reports whether Close has begun.
func (f *Fake) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}
