package redisproc

// Halt stops the process but keeps the server's files, so that a test can
// take one of its ports before calling Restart.
func (s *Server) Halt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.halt()
}

// Dir is the directory that holds every file of the cluster's nodes.
func (c *Cluster) Dir() string { return c.dir }
