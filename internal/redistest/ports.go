package redistest

import (
	"errors"
	"net"
)

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. The listeners are held open until all n are chosen, so the kernel
// cannot hand out the same port twice; they are closed before returning,
// so another process may take a port before redis-server binds it. Start
// notices that clash in the server's log and tries again with new ports.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("loopback listener without a TCP address")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
