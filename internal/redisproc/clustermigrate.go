package redisproc

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

const (
	// migrateBatch is how many keys one MIGRATE moves.
	migrateBatch = 100
	// migrateTimeout is MIGRATE's own bound on its exchange with the
	// target.
	migrateTimeout = 5 * time.Second
	// migrateSettleTimeout bounds the wait, after the slot has moved, for
	// every live node to say so; gossip takes a few hundred milliseconds
	// at most.
	migrateSettleTimeout = 10 * time.Second
)

// MigrateSlot moves slot, with its keys, from the primary that serves it
// to the primary to, as redis-cli --cluster reshard does: CLUSTER SETSLOT
// IMPORTING on to, MIGRATING on the source, then CLUSTER GETKEYSINSLOT and
// MIGRATE, in batches of 100 keys, until the source holds none, then
// CLUSTER SETSLOT NODE on to, on the source, and on every other live
// primary. It returns once every live node says that to serves the slot.
// Clients may go on using the slot's keys meanwhile: while the keys move,
// the source answers for those it still holds and sends ASK for the others,
// and once the slot has moved, it answers MOVED. Moving a slot to the
// primary that serves it does nothing. If a step fails, MigrateSlot
// returns its error and leaves the slot as that step found it, possibly
// still importing and migrating.
func (c *Cluster) MigrateSlot(slot int, to *Server) error {
	if err := migrateMembers(c.members, slot, c.index(to), 0); err != nil {
		return fmt.Errorf("redisproc: MigrateSlot %d to %s: %w", slot, to.Addr, err)
	}
	return nil
}

// MigrateSlotSlowly is MigrateSlot with the slot left open (importing on
// to, migrating on its primary) for open before its keys move, as a
// reshard of a slot with many keys leaves it while MIGRATE works through
// them: meanwhile the source answers TRYAGAIN to a command on several of
// the slot's keys of which some exist there and some do not.
func (c *Cluster) MigrateSlotSlowly(slot int, to *Server, open time.Duration) error {
	if err := migrateMembers(c.members, slot, c.index(to), open); err != nil {
		return fmt.Errorf("redisproc: MigrateSlotSlowly %d to %s: %w", slot, to.Addr, err)
	}
	return nil
}

// MigrateClusterSlot is Cluster.MigrateSlotSlowly for any cluster: it
// moves slot, with its keys, to members[to], a primary, by the same steps,
// leaving the slot open for open before the keys move, and returns
// once every live member says members[to] serves it. The members must
// carry their IDs, as FormCluster leaves them, and each one's Addr must be
// where the others reach it too: the source's MIGRATE connects to the
// target's Addr, and the target's Password, if any, is sent with it.
func MigrateClusterSlot(members []ClusterMember, slot int, to int, open time.Duration) error {
	if err := migrateMembers(members, slot, to, open); err != nil {
		target := fmt.Sprintf("member %d", to)
		if to >= 0 && to < len(members) {
			target = members[to].Addr
		}
		return fmt.Errorf("redisproc: MigrateClusterSlot %d to %s: %w", slot, target, err)
	}
	return nil
}

// migrateMembers moves slot to members[i], leaving it open for open before
// the keys move; an i out of range is not a node of the cluster.
func migrateMembers(members []ClusterMember, slot, i int, open time.Duration) error {
	switch {
	case slot < 0 || slot >= clusterSlots:
		return fmt.Errorf("slot %d is not in 0-%d", slot, clusterSlots-1)
	case i < 0 || i >= len(members):
		return errNotNode
	case members[i].ID == "":
		return errors.New("the node's ID is not known (FormCluster sets it)")
	}
	to := members[i]
	fromID, err := owner(members, slot)
	if err != nil {
		return err
	}
	if fromID == to.ID {
		return nil
	}
	j := memberIndex(members, fromID)
	if j < 0 {
		return fmt.Errorf("the slot is served by node %s, which is not one of the cluster's", fromID)
	}
	from := members[j]
	v, err := to.view()
	if err != nil {
		return err
	}
	if v.self != to.ID {
		return fmt.Errorf("node %s answers as node %s, not %s", to.Addr, v.self, to.ID)
	}
	if !v.node(v.self).isPrimary() {
		return fmt.Errorf("node %s is a replica", to.Addr)
	}

	slotArg := strconv.Itoa(slot)
	if _, err := to.call("CLUSTER", "SETSLOT", slotArg, "IMPORTING", fromID); err != nil {
		return err
	}
	if _, err := from.call("CLUSTER", "SETSLOT", slotArg, "MIGRATING", to.ID); err != nil {
		return err
	}
	time.Sleep(open)
	if err := migrateKeys(from, to, slotArg); err != nil {
		return err
	}
	// The target first: it takes the slot and a new config epoch, which
	// carries its claim to the others; then the source, which gives up
	// the slot and answers MOVED from then on.
	if _, err := to.call("CLUSTER", "SETSLOT", slotArg, "NODE", to.ID); err != nil {
		return err
	}
	if _, err := from.call("CLUSTER", "SETSLOT", slotArg, "NODE", to.ID); err != nil {
		return err
	}
	for k, m := range members {
		if k == i || k == j || !m.live() {
			continue
		}
		v, err := m.view()
		if err != nil {
			return err
		}
		if !v.node(v.self).isPrimary() {
			continue // replicas follow their primary
		}
		if _, err := m.call("CLUSTER", "SETSLOT", slotArg, "NODE", to.ID); err != nil {
			return err
		}
	}
	err = poll(migrateSettleTimeout, func() error {
		for _, m := range members {
			if !m.live() {
				continue
			}
			v, err := m.view()
			if err != nil {
				return err
			}
			if o := v.owner(slot); o == nil || o.id != to.ID {
				return fmt.Errorf("node %s does not say that node %s serves the slot yet", m.Addr, to.Addr)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the slot has moved, but not every node says so after %v: %w", migrateSettleTimeout, err)
	}
	return nil
}

// migrateKeys moves every key of slot from from to to.
func migrateKeys(from, to ClusterMember, slot string) error {
	host, port := splitAddr(to.Addr)
	for {
		keys, err := from.call("CLUSTER", "GETKEYSINSLOT", slot, strconv.Itoa(migrateBatch))
		if err != nil {
			return err
		}
		if len(keys.Elems) == 0 {
			return nil
		}
		args := []string{"MIGRATE", host, port, "", "0", strconv.FormatInt(migrateTimeout.Milliseconds(), 10)}
		if to.Password != "" {
			args = append(args, "AUTH", to.Password)
		}
		args = append(args, "KEYS")
		for _, k := range keys.Elems {
			args = append(args, k.Str)
		}
		// OK, or NOKEY when every key of the batch has expired since.
		// Not call, whose error would quote the keys and the password.
		v, err := Do(from.Addr, from.Password, args...)
		if err == nil {
			err = v.Err()
		}
		if err != nil {
			return fmt.Errorf("node %s: MIGRATE of %d keys to %s: %w", from.Addr, len(keys.Elems), to.Addr, err)
		}
	}
}
