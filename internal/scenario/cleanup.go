package scenario

import (
	"context"
	"time"

	"github.com/batonlock/baton/conn"
)

// lockSuffixes name the keys baton's lock keeps beside <prefix>{token}.
// They all expire on their own; deleting them leaves a server the demo
// ran against as it found it, an hour sooner.
var lockSuffixes = []string{"", ":wanted", ":fence", ":queue", ":waiters", ":seq"}

func lockKeys(prefix, token string) []string {
	keys := make([]string, len(lockSuffixes))
	for i, s := range lockSuffixes {
		keys[i] = prefix + "{" + token + "}" + s
	}
	return keys
}

// cleanupTimeout bounds the deletion, which runs after the run's context
// may have ended (an interrupted demo cleans up too).
const cleanupTimeout = 5 * time.Second

// deleteKeys deletes keys one by one: they are under different hash tags,
// which a cluster would refuse in one DEL.
func deleteKeys(addr string, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	c, err := conn.Dial(ctx, addr)
	if err != nil {
		return
	}
	defer c.Close()
	cmds := make([][]string, len(keys))
	for i, k := range keys {
		cmds[i] = []string{"DEL", k}
	}
	_, _ = c.DoMulti(ctx, cmds...)
}
