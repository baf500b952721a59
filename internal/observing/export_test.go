package observing

// Queued is how many events wait in q for the deliverer to take them.
func Queued(q *Queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
