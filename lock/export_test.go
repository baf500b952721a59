package lock

// The scripts' sources, for the benchmark baseline that runs them on a bare
// connection.
var (
	AcquireScriptSource = acquireScript.src
	ReleaseScriptSource = releaseScript.src
)

// QueuedAfter is, for a fair lease that waited in the queue, the last
// fencing token handed out when it queued, and whether it queued at all.
func QueuedAfter(ls *Lease) (uint64, bool) { return ls.queuedAfter, ls.queuedAfter != 0 }
