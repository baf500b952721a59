package conn

// Names the tests of package conn_test reach that are not conn's API.

// ErrEmptyCommand is the error of a command with no arguments.
var ErrEmptyCommand = errEmptyCommand

// Pending returns how many calls are waiting for replies, abandoned ones
// included.
func (c *Conn) Pending() int { return c.inFlight() }
