package lock

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonlock/baton/conn"
	"github.com/batonlock/baton/resp"
)

// script is a Lua script run by EVALSHA, falling back to EVAL (which also
// loads it) when the server answers NOSCRIPT.
type script struct {
	src, sha string
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// The scripts' sources: shared.lua is the start of every script, and
// holds the scripts of both modes; fast.lua and fair.lua hold each mode's
// (see shared.lua for how a file is cut into scripts).
var (
	//go:embed shared.lua
	sharedLua string
	//go:embed fast.lua
	fastLua string
	//go:embed fair.lua
	fairLua string
)

var (
	sharedScripts = luaScripts("shared.lua", "", sharedLua)
	fastScripts   = luaScripts("fast.lua", sharedLua, fastLua)
	fairScripts   = luaScripts("fair.lua", sharedLua, fairLua)

	extendScript       = sharedScripts.named("extend")
	plainReleaseScript = sharedScripts.named("plainRelease")
	inspectScript      = sharedScripts.named("inspect")
)

// scriptMark begins a script's part of a .lua file: "--- name".
const scriptMark = "\n--- "

// luaFile is one .lua file cut into its scripts, by name.
type luaFile struct {
	name    string
	scripts map[string]script
}

// luaScripts cuts src, the .lua file called name, into its scripts: each
// is the part of shared before its first script, then the part of src
// before its first script, then its own lines. shared is "" for the file
// that is shared itself.
func luaScripts(name, shared, src string) luaFile {
	head := func(file string) string {
		h, _, _ := strings.Cut(file, scriptMark)
		return h
	}
	prefix := head(shared) + head(src)
	parts := strings.Split(src, scriptMark)
	f := luaFile{name: name, scripts: make(map[string]script, len(parts)-1)}
	for _, part := range parts[1:] {
		scriptName, body, _ := strings.Cut(part, "\n")
		f.scripts[scriptName] = newScript(prefix + "\n-- " + name + ": " + scriptName + "\n" + body)
	}
	return f
}

// named is the script called name. The files are the package's own, so a
// missing one is a mistake in them, which every test of the package finds
// at start.
func (f luaFile) named(name string) script {
	s, ok := f.scripts[name]
	if !ok {
		panic("lock: " + f.name + " has no script " + name)
	}
	return s
}

var pingCommand = []string{"PING"}

// allScripts are loaded by Open, so that the first use of each is an
// EVALSHA like every other.
var allScripts = []script{fastAcquireScript, fastWithdrawScript, fastReleaseScript, fastCommitScript,
	fairAcquireScript, fairReleaseScript, fairCommitScript, extendScript, plainReleaseScript, inspectScript}

// loadScripts sends SCRIPT LOAD for every script in one write. It is an
// optimisation only: where SCRIPT is refused or forgotten (a restart, a
// failover, SCRIPT FLUSH), EVALSHA's NOSCRIPT falls back to EVAL.
func loadScripts(ctx context.Context, c *conn.Client) {
	cmds := make([][]string, len(allScripts))
	for i, s := range allScripts {
		cmds[i] = []string{"SCRIPT", "LOAD", s.src}
	}
	_, _ = c.DoMulti(ctx, cmds...)
}

// scriptCall is one run of a script: its KEYS and ARGV, and whether a
// PING leads it in its write. The commands that may follow it in the same
// write are passed beside it (after), so that a call's keys and arguments
// do not escape with them: they stay on the caller's stack.
type scriptCall struct {
	// script is a pointer so that the escape of its text and SHA, which
	// go out in the command, is not taken for an escape of keys and args
	// (escape analysis does not tell a struct's fields apart).
	script     *script
	keys, args []string
	lead       lead
}

// lead says what goes before a script in its write.
type lead int

const (
	alone     lead = iota // the script leads its write
	pingFirst             // a PING leads it: the release's wire rule (see the package doc)
)

// scriptResult is what a script run came to.
type scriptResult struct {
	reply resp.Value   // the script's own
	after []resp.Value // the replies of the commands after the script; nil if none were sent
	// short, under WithReplicaAck, is an error matching errReplicaAck
	// when the WAIT counted too few replicas (see Locker.run); the reply
	// still says what the script did.
	short error
}

// scriptSource is how a script is named in its command.
type scriptSource int

const (
	bySHA  scriptSource = iota // EVALSHA and the script's SHA1
	byText                     // EVAL and the script's text, which also loads it
)

// runScript runs sc on c, followed in the same write by the commands
// after, by the script's SHA, and again by its text if the server does not
// know it. It returns the script's reply and the commands'. An error reply
// of the script comes back as the error too.
func runScript(ctx context.Context, c commander, sc scriptCall, after [][]string) (scriptResult, error) {
	r, err := sc.send(ctx, c, bySHA, after)
	if errors.Is(err, resp.NoScript) {
		r, err = sc.send(ctx, c, byText, after)
	}
	return r, err
}

// runAcked is runScript with the Locker's WAIT, if any, after the
// other commands in the same write: the result's short says whether
// enough replicas acknowledged the script's writes.
func (l *Locker) runAcked(ctx context.Context, c commander, sc scriptCall, after [][]string) (scriptResult, error) {
	if l.waitCmd == nil {
		return runScript(ctx, c, sc, after)
	}
	r, err := runScript(ctx, c, sc, append(after[:len(after):len(after)], l.waitCmd))
	if err != nil {
		return scriptResult{reply: r.reply}, err
	}
	last := len(r.after) - 1
	r.short = l.acknowledged(r.after[last])
	r.after = r.after[:last]
	if last == 0 {
		r.after = nil // only the WAIT followed the script
	}
	return r, nil
}

// command is s's EVALSHA or EVAL command.
func (s script) command(src scriptSource, keys, args []string) []string {
	return s.appendCommand(make([]string, 0, 3+len(keys)+len(args)), src, keys, args)
}

// pingBatch is PING and a script's command, made in one allocation: a
// release's, or any script sent behind a PING, whose arguments fit.
type pingBatch struct {
	cmds [2][]string
	args [16]string // a fair release's 13, a fast commit's 15
}

func (s script) appendCommand(cmd []string, src scriptSource, keys, args []string) []string {
	if src == byText {
		cmd = append(cmd, "EVAL", s.src)
	} else {
		cmd = append(cmd, "EVALSHA", s.sha)
	}
	cmd = append(cmd, strconv.Itoa(len(keys)))
	cmd = append(cmd, keys...)
	return append(cmd, args...)
}

// send sends sc and after once, naming the script as src says.
func (sc scriptCall) send(ctx context.Context, c commander, src scriptSource, after [][]string) (scriptResult, error) {
	s, ping := sc.script, sc.lead == pingFirst
	var replies []resp.Value
	var err error
	switch {
	case !ping && len(after) == 0:
		v, err := c.Do(ctx, s.command(src, sc.keys, sc.args)...)
		return scriptResult{reply: v}, err
	case ping && len(after) == 0 && 3+len(sc.keys)+len(sc.args) <= len(pingBatch{}.args):
		b := new(pingBatch)
		b.cmds[0], b.cmds[1] = pingCommand, s.appendCommand(b.args[:0], src, sc.keys, sc.args)
		replies, err = c.DoMulti(ctx, b.cmds[:]...)
	default:
		cmd := s.command(src, sc.keys, sc.args)
		cmds := make([][]string, 0, 2+len(after))
		if ping {
			cmds = append(cmds, pingCommand)
		}
		cmds = append(append(cmds, cmd), after...)
		replies, err = c.DoMulti(ctx, cmds...)
	}
	if err != nil {
		return scriptResult{}, err
	}
	if ping {
		replies = replies[1:]
	}
	r := scriptResult{reply: replies[0]}
	if len(replies) > 1 {
		r.after = replies[1:]
	}
	return r, r.reply.Err()
}

// extendArgs are the ARGV of shared.lua's extend.
type extendArgs struct{ owner, ttl string }

func (a extendArgs) argv() []string { return []string{a.owner, a.ttl} }

// plainReleaseArgs are the ARGV of shared.lua's plainRelease.
type plainReleaseArgs struct{ owner string }

func (a plainReleaseArgs) argv() []string { return []string{a.owner} }

// inspectArgs are the ARGV of shared.lua's inspect.
type inspectArgs struct{ fair bool }

func (a inspectArgs) argv() []string { return []string{flag(a.fair)} }

// commitArgs are the ARGV of the commit of either mode: fast.lua's and
// fair.lua's take the same.
type commitArgs struct {
	owner, value, stateTTL string
	keep                   bool // keep the lock, else let it go
	ttl                    string
	ifExists               bool // write only over a state that exists
	publish                string
	retention              string // the fencing counter's TTL, for a hand-off
}

func (a commitArgs) argv() []string {
	return []string{a.owner, a.value, a.stateTTL, flag(a.keep), a.ttl, flag(a.ifExists), a.publish, a.retention}
}

// flag is a boolean ARGV as the scripts read it: "1" or "0".
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// integerReply checks that a script answered with an integer within
// [lo, hi]: a server that answers otherwise is not running our script, and
// nothing it said is trusted.
func integerReply(v resp.Value, lo, hi int64) (int64, error) {
	if v.Type != resp.Integer || v.Int < lo || v.Int > hi {
		return 0, fmt.Errorf("%w: %s", errBadReply, v)
	}
	return v.Int, nil
}
