package cluster

import "errors"

// ErrTooManyRetries is matched by the error of a Do or DoMulti that sent
// its batch as many times as WithMaxRetries allows and was still
// redirected, or still could not reach a node. The error also wraps the
// last MOVED or ASK reply (test it with errors.Is and resp.Moved or
// resp.Ask) or the last connection error.
var ErrTooManyRetries = errors.New("cluster: too many retries")

// errEmptyCommand is returned for a command with no arguments.
var errEmptyCommand = errors.New("cluster: empty command")
