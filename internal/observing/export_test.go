package observing

// Queued is how many events wait in q's channel.
func Queued(q *Queue) int { return len(q.events) }
