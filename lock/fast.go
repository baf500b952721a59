package lock

// The fast mode's scripts (fast.lua), and the ARGV of each.
var (
	fastAcquireScript  = fastScripts.named("acquire")
	fastWithdrawScript = fastScripts.named("withdraw")
	fastReleaseScript  = fastScripts.named("release")
	fastCommitScript   = fastScripts.named("commit")
)

// askMode is how an acquire asks the holder to let go (fast.lua's
// acquire, ARGV ask).
type askMode string

const (
	askNot   askMode = "0" // not at all: a claim that never asked has no request to take back
	askFirst askMode = "1" // a claim's first ask, whose request cannot stand yet
	askAgain askMode = "2" // a later ask, whose request may stand
)

// fastAcquireArgs are the ARGV of fast.lua's acquire.
type fastAcquireArgs struct {
	owner, ttl string
	ask        askMode
	asker      string // "<waiter-id> <channel>", where a hand-off reaches the claim's waiter
	retention  string // the fencing counter's TTL
	publish    string
}

func (a fastAcquireArgs) argv() []string {
	return []string{a.owner, a.ttl, string(a.ask), a.asker, a.retention, a.publish}
}

// fastWithdrawArgs are the ARGV of fast.lua's withdraw.
type fastWithdrawArgs struct {
	owner   string
	asker   string // the claim's request's asker, "" if it never asked
	window  string // the hand-off window
	publish string
}

func (a fastWithdrawArgs) argv() []string {
	return []string{a.owner, a.asker, a.window, a.publish}
}

// releaseArgs are the ARGV of the release of either mode: fast.lua's and
// fair.lua's take the same.
type releaseArgs struct {
	owner   string
	window  string // the hand-off window
	publish string
}

func (a releaseArgs) argv() []string { return []string{a.owner, a.window, a.publish} }

// commitArgs are the ARGV of the commit of either mode: fast.lua's and
// fair.lua's take the same.
type commitArgs struct {
	owner, value, stateTTL string
	keep                   bool // keep the lock, else let it go
	ttl                    string
	ifExists               bool // write only over a state that exists
	window                 string
	publish                string
}

func (a commitArgs) argv() []string {
	return []string{a.owner, a.value, a.stateTTL, flag(a.keep), a.ttl, flag(a.ifExists), a.window, a.publish}
}

// flag is a boolean ARGV as the scripts read it: "1" or "0".
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
