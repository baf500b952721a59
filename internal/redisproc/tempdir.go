package redisproc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// makeDir makes a temporary directory for one server or cluster, named
// after this process, "<kind>-<pid>-<random>", first removing those of
// earlier processes that are gone: a test binary killed by go test's
// -timeout, or by a signal, leaves its servers' directories behind (its
// servers die with it, see process_linux.go), and nothing else would
// ever remove them.
func makeDir(kind string) (string, error) {
	removeOrphans(kind)
	return os.MkdirTemp("", kind+"-"+strconv.Itoa(os.Getpid())+"-")
}

// removeOrphans removes the directories of kind whose process is gone.
func removeOrphans(kind string) {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), kind+"-*-*"))
	for _, p := range paths {
		rest := strings.TrimPrefix(filepath.Base(p), kind+"-")
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || Alive(pid) {
			continue
		}
		_ = os.RemoveAll(p)
	}
}
