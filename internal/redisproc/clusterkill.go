package redisproc

import "fmt"

// Kill crashes node s: it sends its process SIGKILL, which leaves the
// node no chance to tell anyone or tidy up, and returns once the process
// has exited. The node stays down, its peers to find out after
// MemberNodeTimeout and fail it over if it was a primary with a replica
// (WaitHealthy waits for that), until s.Restart brings it back on the same
// port with its nodes.conf: it rejoins the cluster as itself, a primary
// that was failed over as a replica of its successor, and resyncs from its
// primary, having kept no data. A pause in force ends with the process.
// Kill returns ErrStopped if the node is not running: killed already,
// stopped, or failed to restart.
func (c *Cluster) Kill(s *Server) error {
	if c.index(s) < 0 {
		return fmt.Errorf("redisproc: Kill: %s: %w", s.Addr, errNotNode)
	}
	if err := s.kill(); err != nil {
		return fmt.Errorf("redisproc: Kill %s: %w", s.Addr, err)
	}
	return nil
}

// kill ends the process with SIGKILL, keeping the files for a Restart.
func (s *Server) kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ErrStopped
	}
	// Kill fails only when the process has exited already, which is
	// what is wanted anyway; SIGKILL ends a frozen process too.
	_ = s.proc.cmd.Process.Kill()
	<-s.proc.done
	s.proc = nil
	s.endPause()
	return nil
}

// running reports whether the server's process runs, frozen or not.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// answering reports whether the server's process runs and is not frozen
// by a Pause, so that it can be asked something.
func (s *Server) answering() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false
	}
	if s.paused == nil {
		return true
	}
	select {
	case <-s.paused.done: // thawed already, Resume not called yet
		return true
	default:
		return false
	}
}
