// Package resp encodes Redis commands and decodes Redis replies in RESP2 and
// RESP3, with no network code of its own.
//
// Commands are appended to a caller's byte slice ([AppendCommand]), so a
// connection can coalesce many of them into one buffer and one write. Replies
// are read by a [Reader] over any io.Reader. Every RESP3 type is understood,
// push frames included; a Reader built with [WithRESP2] refuses the RESP3-only
// types, as a RESP2 connection must. Limits on bulk length, aggregate length,
// nesting depth and the memory a whole reply takes once decoded are checked
// before anything is allocated for what they limit, and bulk payloads and
// aggregates grow only as their bytes arrive, so a hostile or broken server
// cannot make the client allocate without bound. A frame over a limit is read
// past in bounded memory and fails alone with a [*LimitError], matching
// [ErrLimit]; the next frame is read as usual. Bytes that are not valid RESP
// fail with an error matching [ErrProtocol], and that error is sticky. Error
// replies become [*Error], whose prefix is tested with errors.Is against a
// [Prefix] such as [NoScript].
//
// Concurrency: a Reader belongs to one goroutine at a time, like bufio.Reader.
// The Values it returns are immutable and may be shared freely: their strings
// are never written again once returned. The Append functions are pure.
package resp
