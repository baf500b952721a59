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

// run executes s on keys with args, preceded in the same write by a PING
// when ping is set (the release's wire rule), and returns the script's
// reply. An error reply comes back as the error too.
func run(ctx context.Context, c commander, s script, ping bool, keys []string, args ...string) (resp.Value, error) {
	v, _, err := runWith(ctx, c, s, ping, keys, args, nil)
	return v, err
}

// runWith is run with further commands sent right after the script, in the
// same write; their replies come back after the script's.
func runWith(ctx context.Context, c commander, s script, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	v, rest, err := s.call(ctx, c, false, ping, keys, args, after)
	if errors.Is(err, resp.NoScript) {
		v, rest, err = s.call(ctx, c, true, ping, keys, args, after)
	}
	return v, rest, err
}

// command is EVALSHA, or EVAL with the source, of s.
func (s script) command(eval bool, keys, args []string) []string {
	return s.appendCommand(make([]string, 0, 3+len(keys)+len(args)), eval, keys, args)
}

// pingBatch is PING and a script's command, made in one allocation: a
// release's, or any script sent behind a PING, whose arguments fit.
type pingBatch struct {
	cmds [2][]string
	args [12]string
}

func (s script) appendCommand(cmd []string, eval bool, keys, args []string) []string {
	if eval {
		cmd = append(cmd, "EVAL", s.src)
	} else {
		cmd = append(cmd, "EVALSHA", s.sha)
	}
	cmd = append(cmd, strconv.Itoa(len(keys)))
	cmd = append(cmd, keys...)
	return append(cmd, args...)
}

func (s script) call(ctx context.Context, c commander, eval, ping bool, keys, args []string, after [][]string) (resp.Value, []resp.Value, error) {
	var replies []resp.Value
	var err error
	switch {
	case !ping && len(after) == 0:
		v, err := c.Do(ctx, s.command(eval, keys, args)...)
		return v, nil, err
	case ping && len(after) == 0 && 3+len(keys)+len(args) <= len(pingBatch{}.args):
		b := new(pingBatch)
		b.cmds[0], b.cmds[1] = pingCommand, s.appendCommand(b.args[:0], eval, keys, args)
		replies, err = c.DoMulti(ctx, b.cmds[:]...)
	default:
		cmd := s.command(eval, keys, args)
		cmds := make([][]string, 0, 2+len(after))
		if ping {
			cmds = append(cmds, pingCommand)
		}
		cmds = append(append(cmds, cmd), after...)
		replies, err = c.DoMulti(ctx, cmds...)
	}
	if err != nil {
		return resp.Value{}, nil, err
	}
	if ping {
		replies = replies[1:]
	}
	return replies[0], replies[1:], replies[0].Err()
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
