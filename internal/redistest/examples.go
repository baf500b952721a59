package redistest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/batonlock/baton/internal/redisproc"
)

// TestingM is what a TestMain runs: the Run of testing.M, and what
// goleak.VerifyTestMain takes.
type TestingM interface {
	Run() int
}

// WithExampleServer wraps m for a package whose runnable examples talk to
// Redis at *addr, a package variable that reads naturally in the examples
// as they appear in the documentation:
//
//	var redisAddr = "localhost:6379" // TestMain points it at a throwaway server
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(redistest.WithExampleServer(m, &redisAddr))
//	}
//
// Its Run starts a throwaway redis-server (redisproc.Start), sets *addr to
// its address, runs m, and stops the server before it returns, so that
// goleak, checking after Run, finds none of the server's goroutines. The
// server is the examples' alone; tests start their own with [Start].
// Examples run once per test binary whatever -count says, so each finds
// the server as the examples before it left it.
//
// Without redis-server on PATH, Run prints one line saying why and, if
// RequireRedisEnv is set to 1, returns 1 without running m. Otherwise it
// skips the examples (-test.skip gains ^Example) and runs the rest, whose
// tests skip on their own through Start. A server that is there but does
// not start fails the run.
func WithExampleServer(m *testing.M, addr *string) TestingM {
	return &exampleMain{m: m, addr: addr}
}

// exampleMain is the TestingM that WithExampleServer returns.
type exampleMain struct {
	m    *testing.M
	addr *string
}

func (e *exampleMain) Run() int {
	srv, err := redisproc.Start()
	switch {
	case errors.Is(err, redisproc.ErrNoBinary) && os.Getenv(RequireRedisEnv) != "1":
		if err := skipExamples(); err != nil {
			fmt.Fprintln(os.Stderr, "redistest:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "redistest: examples skipped: redis-server not found on PATH; install it (apt-get install redis-server) to run them, or set %s=1 to fail instead of skipping\n", RequireRedisEnv)
		return e.m.Run()
	case errors.Is(err, redisproc.ErrNoBinary):
		fmt.Fprintf(os.Stderr, "redistest: FAIL: the examples need redis-server, and %s=1 requires them to run: %v\n", RequireRedisEnv, err)
		return 1
	case err != nil:
		fmt.Fprintf(os.Stderr, "redistest: FAIL: starting the examples' redis-server: %v\n", err)
		return 1
	}
	defer srv.Stop()
	*e.addr = srv.Addr
	return e.m.Run()
}

// skipExamples adds ^Example to -test.skip, keeping what the command line
// put there: a top-level | separates alternatives there, as in -test.run.
func skipExamples() error {
	flag.Parse()
	f := flag.Lookup("test.skip")
	if f == nil {
		return errors.New("no -test.skip flag to skip the examples with")
	}
	skip := "^Example"
	if old := f.Value.String(); old != "" {
		skip = old + "|" + skip
	}
	return flag.Set("test.skip", skip)
}
