package redisproc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

const (
	// clusterBusOffset is how far above its client port a cluster node
	// listens for the cluster bus; Redis fixes it unless cluster-port
	// says otherwise.
	clusterBusOffset = 10000
	// maxClusterPort is the highest client port whose bus port exists.
	maxClusterPort = 65535 - clusterBusOffset
	// minRandomPort is the lowest port tried when the kernel's choice is
	// too high for a cluster node: below it lie the ports that services
	// are registered on.
	minRandomPort = 10000
	// clusterPortTries bounds the search for a cluster node's port. The
	// kernel hands out ports up to 60999 by default, so most of its
	// choices fit; a random port below fits as often as the machine is
	// not busy.
	clusterPortTries = 100
)

// FreePorts returns n loopback ports that were free a moment ago, for a
// server started some other way, in a container say.
func FreePorts(n int) ([]int, error) { return freePorts(n, noBusPort) }

// busPort says whether the first port chosen needs its cluster bus port
// free too.
type busPort int

const (
	noBusPort   busPort = iota // any free ports
	withBusPort                // the first is a cluster node's
)

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. With withBusPort, the first one, a cluster node's, is at most
// maxClusterPort and its bus port, clusterBusOffset above it, was free as
// well. The
// listeners are held open until every port is chosen, so the kernel cannot
// hand out the same port twice; they are closed before returning, so
// another process may take a port before redis-server binds it. Start
// notices that clash in the server's log and tries again with new ports.
func freePorts(n int, bus busPort) ([]int, error) {
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	if bus == withBusPort && n > 0 {
		port, bus, err := clusterPort()
		if err != nil {
			return nil, err
		}
		held = append(held, port, bus)
		ports = append(ports, listenerPort(port))
	}
	for len(ports) < n {
		l, err := listen(0)
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		ports = append(ports, listenerPort(l))
	}
	return ports, nil
}

// clusterPort returns listeners on a port at most maxClusterPort and on
// its bus port.
func clusterPort() (port, bus net.Listener, err error) {
	for range clusterPortTries {
		l, err := listen(0)
		if err != nil {
			return nil, nil, err
		}
		if listenerPort(l) > maxClusterPort {
			l.Close()
			if l, err = listen(minRandomPort + rand.IntN(maxClusterPort-minRandomPort+1)); err != nil {
				continue // taken
			}
		}
		b, err := listen(listenerPort(l) + clusterBusOffset)
		if err != nil {
			l.Close()
			continue // the bus port is taken
		}
		return l, b, nil
	}
	return nil, nil, fmt.Errorf("no free port up to %d with its cluster bus port free, in %d tries", maxClusterPort, clusterPortTries)
}

func listen(port int) (net.Listener, error) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	if _, ok := l.Addr().(*net.TCPAddr); !ok {
		l.Close()
		return nil, errors.New("loopback listener without a TCP address")
	}
	return l, nil
}

// listenerPort is the port of a listener made by listen.
func listenerPort(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
