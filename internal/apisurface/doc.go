// Package apisurface checks the size of each public package's API: what
// go doc shows a user, counted as exported names (constants, variables,
// functions, types, and the methods of exported types), against a
// ceiling. A package that grows past its ceiling fails here, so that a
// new exported name is a decision rather than an accident.
//
// go test -v ./internal/apisurface prints each package's count.
package apisurface
