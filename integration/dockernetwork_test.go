package integration_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/ory/dockertest/v3"
	"github.com/ory/dockertest/v3/docker"

	"github.com/batonlock/baton/internal/redisproc"
)

// removeNetwork removes a network of the suite, once its containers are
// gone; one that is gone already is not an error.
func removeNetwork(pool *dockertest.Pool, id string) {
	err := pool.Client.RemoveNetwork(id)
	var gone *docker.NoSuchNetwork
	if err != nil && !errors.As(err, &gone) {
		fmt.Fprintf(os.Stderr, "integration: removing network %.12s: %v\n", id, err)
	}
}

// purgeNetworks removes the networks with label (a key, or key=value)
// that remove picks: to run once the containers on them are removed.
func purgeNetworks(pool *dockertest.Pool, label string, remove func(docker.Network) bool) {
	networks, err := pool.Client.FilteredListNetworks(docker.NetworkFilterOpts{"label": {label: true}})
	if err != nil {
		return // the containers are what matters most
	}
	for _, n := range networks {
		if remove(n) {
			removeNetwork(pool, n.ID)
		}
	}
}

// purgeOrphanNetworks removes the networks of earlier runs whose process
// is gone without removing them.
func purgeOrphanNetworks(pool *dockertest.Pool) {
	purgeNetworks(pool, containerLabel, func(n docker.Network) bool {
		pid, err := strconv.Atoi(n.Labels[pidLabel])
		if err != nil || redisproc.Alive(pid) {
			return false
		}
		fmt.Printf("integration: removing network %s, left by an earlier run (process %d) that is gone\n", n.Name, pid)
		return true
	})
}

// purgeRunNetworks removes every network of this run that is still there.
func purgeRunNetworks(pool *dockertest.Pool) {
	purgeNetworks(pool, containerLabel+"="+suite.runLabel, func(docker.Network) bool { return true })
}
