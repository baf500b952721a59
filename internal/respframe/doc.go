// Package respframe holds the framing rules of RESP that package resp's
// Reader and package conn's reads between frames must agree on: how a
// number line is parsed and bounded, and, without decoding anything,
// whether the bytes buffered so far hold a whole frame.
//
// conn reads for a caller whose context can end only between frames: it
// fills the buffer under its resp.Reader (the *bufio.Reader it handed to
// resp.NewReader) with [Fill], which decodes nothing, until [Whole] says the
// next frame is all there; Read then decodes it without touching the
// socket. resp's tests hold Whole to that promise against the Reader.
package respframe
