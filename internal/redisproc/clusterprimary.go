package redisproc

import (
	"errors"
	"fmt"
)

// Primary returns the node that serves slot now. It asks every live node
// (CLUSTER NODES) and, where their accounts differ, as they do for a
// moment after a failover or a migration, believes the claim with the
// highest config epoch, as the cluster itself does; so the answer is right
// as soon as the new owner has taken the slot, before the others have
// heard. A primary frozen by Pause still serves its slots until it is
// failed over. Primary returns an error if the slot's owner is down (killed
// and not yet failed over) or no node answers.
func (c *Cluster) Primary(slot int) (*Server, error) {
	i, err := ClusterPrimary(c.members, slot)
	if err != nil {
		return nil, err
	}
	s := c.nodes[i]
	if !s.running() {
		return nil, fmt.Errorf("redisproc: slot %d is served by node %s, which is down", slot, s.Addr)
	}
	return s, nil
}

// ClusterPrimary is Cluster.Primary for any cluster: it returns the index
// in members of the primary that serves slot now, by the claim with the
// highest config epoch among those of the live members. Until its peers
// fail it over, that primary may be down: the caller, who knows, says so.
// ClusterPrimary returns an error if no live member answers, none says who
// serves the slot, or the one it names is not a member.
func ClusterPrimary(members []ClusterMember, slot int) (int, error) {
	if slot < 0 || slot >= clusterSlots {
		return -1, fmt.Errorf("redisproc: Primary: slot %d is not in 0-%d", slot, clusterSlots-1)
	}
	id, err := owner(members, slot)
	if err != nil {
		return -1, fmt.Errorf("redisproc: Primary of slot %d: %w", slot, err)
	}
	i := memberIndex(members, id)
	if i < 0 {
		return -1, fmt.Errorf("redisproc: slot %d is served by node %s, which is not one of the cluster's", slot, id)
	}
	return i, nil
}

// owner returns the ID of the primary that serves slot according to the
// live members: the claim with the highest config epoch.
func owner(members []ClusterMember, slot int) (string, error) {
	var best *viewEntry
	var errs []error
	asked := 0
	for _, m := range members {
		if !m.live() {
			continue
		}
		asked++
		v, err := m.view()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if e := v.owner(slot); e != nil && (best == nil || e.epoch > best.epoch) {
			best = e
		}
	}
	switch {
	case best != nil:
		return best.id, nil
	case asked == 0:
		return "", errors.New("no node is running")
	case len(errs) > 0:
		return "", errors.Join(errs...)
	}
	return "", errors.New("no node says who serves it")
}
