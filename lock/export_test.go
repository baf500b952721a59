package lock

// The scripts' sources, for the benchmark baseline that runs them on a bare
// connection.
var (
	AcquireScriptSource = acquireScript.src
	ReleaseScriptSource = releaseScript.src
)
