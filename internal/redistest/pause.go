package redistest

import (
	"testing"
	"time"
)

// stopWait bounds how long Pause waits for the kernel to stop the process.
const stopWait = time.Second

// Pause freezes the server's process with SIGSTOP, as a long stall of the
// host would, and thaws it with SIGCONT after d, for tests of deadlines
// and timeouts against a real server. It returns once the process is
// stopped (on Linux, where the kernel says so; elsewhere once the signal
// is sent). Meanwhile the kernel still accepts connections and buffers
// commands: they are answered after d. The server is thawed at the test's
// cleanup at the latest, and Stop and Restart thaw it, so both work during
// a pause. Pauses must not overlap: the first to end thaws the server.
// Pause skips the test where processes cannot be frozen (Windows). Like
// t.Fatal, it must be called on the test's goroutine.
func (s *Server) Pause(t testing.TB, d time.Duration) {
	t.Helper()
	if pauseSignal == nil {
		t.Skipf("redistest: Pause needs SIGSTOP, which this system does not have")
	}
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		t.Fatalf("redistest: Pause: the server is stopped")
	}
	proc := p.cmd.Process
	if err := proc.Signal(pauseSignal); err != nil {
		t.Fatalf("redistest: Pause: %v", err)
	}
	// The thawing goroutine is started before anything can fail, so that
	// the cleanup always thaws the process, and it is waited for there.
	cancel, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-cancel:
		}
		// Fails only if the process has exited meanwhile (a Stop or a
		// Restart), which needs no thawing.
		_ = proc.Signal(resumeSignal)
	}()
	t.Cleanup(func() {
		close(cancel)
		<-done
	})
	if err := waitStopped(proc.Pid, stopWait); err != nil {
		t.Fatalf("redistest: Pause: %v", err)
	}
}
