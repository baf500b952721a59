package main

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/batonlock/baton/resp"
)

// releaseStyle is one way a lock holder might delete its key.
type releaseStyle struct {
	name string
	// ping sends PING first, in the same write.
	ping bool
	// command is the release of key holding token; for the scripted
	// styles, src says whether the script goes by its SHA or its text.
	command func(key, token string, src scriptSource) []string
	// released reports whether the reply says the key was deleted.
	released func(v resp.Value, token string) bool
}

// pingEvalStyle is the style fast mode releases with, whose order decides
// the verdict.
const pingEvalStyle = "PING+EVAL"

// releaseStyles are the styles the probe compares, in the order of
// DESIGN.md's table. EVAL is sent as the lock sends it: EVALSHA, and EVAL
// (which loads the script) when the server answers NOSCRIPT.
var releaseStyles = []releaseStyle{
	{
		name:     "GETDEL",
		command:  func(key, _ string, _ scriptSource) []string { return []string{"GETDEL", key} },
		released: func(v resp.Value, token string) bool { return v.Str == token },
	},
	{name: "EVAL", command: scriptCommand, released: deletedOne},
	{
		name:     "DEL",
		command:  func(key, _ string, _ scriptSource) []string { return []string{"DEL", key} },
		released: deletedOne,
	},
	{name: pingEvalStyle, ping: true, command: scriptCommand, released: deletedOne},
}

// compareAndDelete is the release script every Redis lock uses (lock's
// plainReleaseScript). KEYS: the key. ARGV: the token. Returns 1 if it
// deleted the key.
const compareAndDelete = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`

// compareAndDeleteSHA is the script's SHA1, for EVALSHA.
var compareAndDeleteSHA = func() string {
	sum := sha1.Sum([]byte(compareAndDelete))
	return hex.EncodeToString(sum[:])
}()

// scriptSource is how a scripted release names its script.
type scriptSource int

const (
	bySHA  scriptSource = iota // EVALSHA and the SHA1
	byText                     // EVAL and the text, which also loads it
)

func scriptCommand(key, token string, src scriptSource) []string {
	if src == byText {
		return []string{"EVAL", compareAndDelete, "1", key, token}
	}
	return []string{"EVALSHA", compareAndDeleteSHA, "1", key, token}
}

func deletedOne(v resp.Value, _ string) bool { return v.Type == resp.Integer && v.Int == 1 }

// errNotReleased is matched when a release found the key gone or holding
// another token: something else touched the probe's key.
var errNotReleased = errors.New("the key was not released")

// sendRelease writes the release in style st, in one write.
func (s *probeSession) sendRelease(st releaseStyle, token string, src scriptSource) error {
	cmds := [][]string{st.command(s.key, token, src)}
	if st.ping {
		cmds = [][]string{{"PING"}, cmds[0]}
	}
	if err := s.rel.send(cmds...); err != nil {
		return fmt.Errorf("%s: %s release: %w", s.shown, st.name, err)
	}
	return nil
}

// readRelease reads the replies to a release in style st and checks that
// it deleted the key. A server error is returned wrapped, matching
// *resp.Error: resp.NoScript when the script must be sent with EVAL.
func (s *probeSession) readRelease(st releaseStyle, token string) error {
	if st.ping {
		v, err := s.rel.read(probeStepTimeout)
		if err != nil {
			return fmt.Errorf("%s: %s release: %w", s.shown, st.name, err)
		}
		if !isPong(v) {
			return fmt.Errorf("%s: %s release: PING answered %s", s.shown, st.name, v)
		}
	}
	v, err := s.rel.read(probeStepTimeout)
	if err == nil {
		err = v.Err()
	}
	switch {
	case err != nil:
		return fmt.Errorf("%s: %s release: %w", s.shown, st.name, err)
	case !st.released(v, token):
		return fmt.Errorf("%s: %s release of %s answered %s: %w", s.shown, st.name, s.key, v, errNotReleased)
	}
	return nil
}
