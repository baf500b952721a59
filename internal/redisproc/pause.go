package redisproc

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// stopWait bounds how long Pause waits for the kernel to stop the process.
const stopWait = time.Second

// thaw is the goroutine that ends a pause: it thaws the process when the
// pause is over, or at once when cancel is closed, and then closes done.
// It belongs to the Server, whose endPause stops it and waits for it.
type thaw struct {
	cancel chan struct{} // closed by endPause, under Server.mu
	done   chan struct{} // closed by the goroutine as it returns
}

// Pause freezes the server's process with SIGSTOP, as a long stall of the
// host would, and thaws it with SIGCONT after d, for tests of deadlines
// and timeouts against a real server. It returns once the process is
// stopped (on Linux, where the kernel says so; elsewhere once the signal
// is sent). Meanwhile the kernel still accepts connections and buffers
// commands: they are answered after d. Resume, Restart and Stop end the
// pause early, so the last two work during a pause; a Pause during
// another ends that one first. Pause returns an error wrapping
// errors.ErrUnsupported where processes cannot be frozen (Windows), and
// ErrStopped when no process runs.
func (s *Server) Pause(d time.Duration) error {
	if pauseSignal == nil {
		return fmt.Errorf("redisproc: Pause needs SIGSTOP, which this system does not have: %w", errors.ErrUnsupported)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ErrStopped
	}
	s.endPause()
	proc := s.proc.cmd.Process
	if err := proc.Signal(pauseSignal); err != nil {
		return fmt.Errorf("redisproc: Pause: %w", err)
	}
	s.paused = startThaw(proc, d)
	if err := waitStopped(proc.Pid, stopWait); err != nil {
		// Not left frozen for d by a Pause that said it failed.
		s.endPause()
		return fmt.Errorf("redisproc: Pause: %w", err)
	}
	return nil
}

// Resume ends the pause in force now: it thaws the server and returns once
// the goroutine that was to thaw it has ended. Without a pause in force it
// does nothing.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endPause()
}

// endPause ends the pause in force, if any. The caller holds s.mu.
func (s *Server) endPause() {
	if s.paused == nil {
		return
	}
	close(s.paused.cancel)
	<-s.paused.done
	s.paused = nil
}

// startThaw starts the goroutine that thaws proc after d.
func startThaw(proc *os.Process, d time.Duration) *thaw {
	th := &thaw{cancel: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(th.done)
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-th.cancel:
		}
		// Fails only if the process has exited meanwhile (a Stop or a
		// Restart), which needs no thawing.
		_ = proc.Signal(resumeSignal)
	}()
	return th
}
