package apisurface

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ceilings are the most exported names each public package may have.
// Issue 28 set them, from 72 (resp), 48 (conn), 30 (subscriber) and 25
// (lock) before it; conn's 36 waits on a decision, and stands at 45.
// Issue 30 added the observers: lock.WithObserver, lock.WithLogger and
// Locker.Observe, subscriber.WithObserver, and package observe, whose
// names are its events' vocabulary (kinds, operations, modes, how a
// lease was obtained, why it ended). conn's ErrInvalid (an address that
// cannot be read) and DialError (a dial that failed, with its address
// redacted and its cause, such as a refused connection, to errors.Is)
// give callers a documented way to tell those errors apart: four names;
// Client.Interrupt lets an owner such as lock's Close end the calls stuck
// on a server, a dial in progress included, without closing the Client.
// manager.WithCloseWait is the option of Close's documented wait for
// write-backs on their way.
// Issue 45 told a lease's holder of its lock lost on the server:
// Lease.Context and Lease.Err, with the seven causes they report
// (lock); Subscriber.Hold, its Holding and Holding.Close, and the six
// things a Holding is told (subscriber), which lock.New's callers'
// Subscribers must offer; observe's four new reasons.
var ceilings = map[string]int{
	"resp":       50,
	"conn":       50,
	"subscriber": 27,
	"lock":       47,
	"manager":    20,
	"observe":    52,
}

func TestPublicPackagesStayWithinTheirCeilings(t *testing.T) {
	for pkg, ceiling := range ceilings {
		t.Run(pkg, func(t *testing.T) {
			names := exportedNames(t, filepath.Join("..", "..", pkg))
			t.Logf("%s: %d exported names (ceiling %d)", pkg, len(names), ceiling)
			require.LessOrEqual(t, len(names), ceiling, "%s exports %v", pkg, names)
		})
	}
}

// exportedNames lists what go doc shows of the package in dir, its tests
// left out.
func exportedNames(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, dir, notTest, parser.ParseComments)
	require.NoError(t, err)
	require.Len(t, pkgs, 1, "one package in %s", dir)
	var files []*ast.File
	for _, p := range pkgs {
		for _, f := range p.Files {
			files = append(files, f)
		}
	}
	d, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.Base(dir))
	require.NoError(t, err)
	var names []string
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			names = append(names, v.Names...)
		}
	}
	values(d.Consts)
	values(d.Vars)
	for _, f := range d.Funcs {
		names = append(names, f.Name)
	}
	for _, typ := range d.Types {
		names = append(names, typ.Name)
		values(typ.Consts)
		values(typ.Vars)
		for _, f := range typ.Funcs {
			names = append(names, f.Name)
		}
		for _, m := range typ.Methods {
			names = append(names, typ.Name+"."+m.Name)
		}
	}
	return names
}
