// Package resp encodes Redis commands and decodes Redis replies in RESP2 and
// RESP3, with no network code of its own.
//
//	cmd := resp.AppendCommand(nil, "SET", "greeting", "hello")
//	// ... write cmd to the server, then read its reply:
//	r := resp.NewReader(serverConn)
//	v, err := r.Read()
//	switch {
//	case err != nil:
//		// the stream failed, or the reply was over a limit (ErrLimit)
//	case v.Err() != nil:
//		// the server refused the command: errors.Is(v.Err(), resp.WrongType), ...
//	default:
//		fmt.Println(v) // OK
//	}
//
// # Commands
//
// [AppendCommand] appends one command, a RESP array of bulk strings, to a
// caller's byte slice, so that a connection can coalesce many commands into
// one buffer and one write. It allocates nothing when the slice has room.
//
// # Replies
//
// A [Reader] decodes replies from any io.Reader, one [Value] per [Reader.Read].
// Every RESP3 type is understood, push frames included; a Reader built with
// [WithRESP2] refuses the RESP3-only types, as a RESP2 connection must. A
// Value's [Type] says which of its fields are set. RESP2's null bulk and null
// array are read as [Null], so nil replies are tested one way
// ([Value.IsNull]).
//
// A Reader given a *bufio.Reader reads through that buffer and keeps none of
// its own, so its owner can see what has arrived but is not decoded yet; any
// other io.Reader is wrapped in a 16 KiB buffer (see [NewReader]).
//
// # Errors
//
// Error replies are values, not errors of Read: [Value.Err] returns them as
// an [*Error], whose code is tested with errors.Is against a [Prefix] such as
// [NoScript] or [WrongType], never by its text:
//
//	if errors.Is(err, resp.NoScript) { ... } // send EVAL instead of EVALSHA
//
// A code without a constant here is its own Prefix: resp.Prefix("TRYAGAIN").
//
// Bytes that are not valid RESP fail Read with an error matching
// [ErrProtocol], and that error is sticky: the stream is out of step, and
// every later Read returns it.
//
// # Limits
//
// A hostile or broken server cannot make a Reader allocate without bound.
// Limits on bulk length ([WithMaxBulkLen]), aggregate length
// ([WithMaxAggregateLen]), nesting depth ([WithMaxDepth]) and the memory a
// whole reply takes once decoded ([WithMaxReplyMemory]) are checked before
// anything is allocated for what they limit, and bulk payloads and aggregates
// grow only as their bytes arrive. A frame over a limit is read past in
// bounded memory and fails alone, with an error matching [ErrLimit] and a
// Value that holds only the frame's Type; the next Read returns the next
// frame as usual.
//
// # Concurrency
//
// A Reader belongs to one goroutine at a time, like bufio.Reader. The Values
// it returns are immutable and may be shared freely: their strings are never
// written again once returned. AppendCommand is pure.
package resp
