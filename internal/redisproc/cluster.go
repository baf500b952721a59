package redisproc

import (
	"fmt"
	"strconv"
	"time"
)

// clusterMode is what part, if any, a Server plays in a Redis Cluster.
type clusterMode int

const (
	noCluster     clusterMode = iota // a plain server
	soloCluster                      // WithCluster: a one-node cluster holding every slot
	clusterMember                    // a node of StartCluster, joined to its peers
)

const (
	// clusterSlots is how many hash slots a Redis Cluster has.
	clusterSlots = 16384
	// clusterNodeTimeout is the node timeout a one-node cluster runs with.
	// A lone node has no peers to time out; the setting only bounds how
	// long it waits after getting its slots before it says ok (the
	// "rejoin delay", never under 500ms).
	clusterNodeTimeout = 500 * time.Millisecond
	// clusterTimeout bounds the wait for cluster_state:ok. Besides the
	// rejoin delay, Redis keeps a master's state at fail for 2s after it
	// starts, so that it does not take writes before it has heard from
	// its peers.
	clusterTimeout = 10 * time.Second
)

// formCluster gives the node at addr every slot, unless it has them
// already (a Restart keeps its nodes.conf), and waits until it says
// cluster_state:ok, the process exits, or clusterTimeout passes.
func formCluster(p *process, addr, pass string) error {
	info, err := clusterInfo(addr, pass)
	if err != nil {
		return err
	}
	switch assigned := infoField(info, "cluster_slots_assigned"); assigned {
	case strconv.Itoa(clusterSlots):
	case "0":
		replies, err := exchange(addr, pass, pingTimeout, []string{"CLUSTER", "ADDSLOTSRANGE", "0", strconv.Itoa(clusterSlots - 1)})
		if err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE: %w", err)
		}
		if err := replies[0].Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE: %w", err)
		}
	default:
		return fmt.Errorf("the node holds %s of the %d slots; redisproc makes nodes with all or none", assigned, clusterSlots)
	}

	deadline := time.Now().Add(clusterTimeout)
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		state := infoField(info, "cluster_state")
		if state == "ok" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CLUSTER INFO still says cluster_state:%s after %v with every slot assigned", state, clusterTimeout)
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-tick.C:
		}
		if info, err = clusterInfo(addr, pass); err != nil {
			return err
		}
	}
}

// clusterInfo returns the text of CLUSTER INFO.
func clusterInfo(addr, pass string) (string, error) {
	replies, err := exchange(addr, pass, pingTimeout, []string{"CLUSTER", "INFO"})
	if err != nil {
		return "", fmt.Errorf("CLUSTER INFO: %w", err)
	}
	if err := replies[0].Err(); err != nil {
		return "", fmt.Errorf("CLUSTER INFO: %w", err)
	}
	return replies[0].Str, nil
}
