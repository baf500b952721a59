package redisproc

import (
	"io"
	"os"
	"strings"
	"syscall"
)

// logTailLines is how many lines of the server's log a failure quotes.
const logTailLines = 30

// logSize returns the current size of the log file, where the output of the
// next run will start (0 if there is no log yet).
func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readLog returns the log from offset on: the output of one run, since a
// restarted server appends to the same file.
func readLog(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<62))
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	return string(b)
}

// tail returns the last logTailLines lines of log.
func tail(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return strings.Join(lines, "\n")
}

// portClash reports whether a run failed because a port was taken. The log
// is the only account of that redis-server gives (it exits with status 1
// for every startup failure); it quotes the system's text for EADDRINUSE,
// which is also what syscall's Errno says, save for case.
func portClash(log string) bool {
	return strings.Contains(strings.ToLower(log), strings.ToLower(syscall.EADDRINUSE.Error()))
}
