//go:build !unix

package redisproc

// alive cannot tell here, so it says yes: a directory is left rather than
// one in use removed.
func alive(int) bool { return true }
