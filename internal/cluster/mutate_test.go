package cluster_test

import (
	"math/rand/v2"
	"strings"

	"github.com/batonlock/baton/resp"
)

// newRand returns a generator with a fixed seed, so that a failure comes
// back on the next run.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

// stringReader reads a string.
func stringReader(s string) *strings.Reader { return strings.NewReader(s) }

// words are the strings mutate puts in replies: field names, values the
// parsers branch on, and values they must refuse.
var words = []string{
	"slots", "nodes", "port", "tls-port", "endpoint", "ip", "role", "master",
	"replica", "health", "online", "failed", "?", "", "127.0.0.1", "::1",
	"unix:///tmp/x", "a b", "-1", "0", "16383", "16384", "65536", "x",
}

// mutate returns a copy of v changed at random, to depth levels down: a
// value replaced by one of any type, elements dropped, repeated or
// changed. v itself is left as it is.
func mutate(rng *rand.Rand, v resp.Value, depth int) resp.Value {
	if depth == 0 || rng.IntN(6) == 0 {
		return randomValue(rng, 2)
	}
	if len(v.Elems) == 0 {
		return v
	}
	elems := append([]resp.Value(nil), v.Elems...)
	switch rng.IntN(4) {
	case 0:
		i := rng.IntN(len(elems))
		elems = append(elems[:i], elems[i+1:]...)
	case 1:
		elems = append(elems, elems[rng.IntN(len(elems))])
	default:
		i := rng.IntN(len(elems))
		elems[i] = mutate(rng, elems[i], depth-1)
	}
	if v.Type == resp.Map && len(elems)%2 != 0 {
		v.Type = resp.Array // a map always has pairs; an array need not
	}
	v.Elems = elems
	return v
}

// randomValue is a value of any type, aggregates nested to depth.
func randomValue(rng *rand.Rand, depth int) resp.Value {
	switch rng.IntN(8) {
	case 0:
		return resp.Value{Type: resp.Integer, Int: []int64{-1, 0, 1, 7000, 16383, 16384, 65535, 65536, 1 << 62}[rng.IntN(9)]}
	case 1, 2:
		return resp.Value{Type: resp.Bulk, Str: words[rng.IntN(len(words))]}
	case 3:
		return resp.Value{Type: resp.Null}
	case 4:
		return resp.Value{Type: resp.Double, Float: 1.5, Str: "1.5"}
	case 5:
		return resp.Value{Type: resp.Boolean, Int: 1}
	}
	n := rng.IntN(5)
	if depth == 0 {
		n = 0
	}
	t := resp.Array
	if rng.IntN(3) == 0 {
		t, n = resp.Map, n&^1
	}
	v := resp.Value{Type: t}
	for range n {
		v.Elems = append(v.Elems, randomValue(rng, depth-1))
	}
	return v
}
