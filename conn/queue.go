package conn

// callQueue is a FIFO of calls whose replies are due, in wire order.
type callQueue struct {
	items []*call
	head  int
}

func (q *callQueue) push(c *call) { q.items = append(q.items, c) }

func (q *callQueue) len() int { return len(q.items) - q.head }

func (q *callQueue) front() *call {
	if q.head == len(q.items) {
		return nil
	}
	return q.items[q.head]
}

func (q *callQueue) pop() {
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 64 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
}

// drain removes and returns every call.
func (q *callQueue) drain() []*call {
	all := q.items[q.head:]
	q.items, q.head = nil, 0
	return all
}
