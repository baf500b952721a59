package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// machine describes the client's machine in one line: cores, GOMAXPROCS
// and the CPU model where /proc/cpuinfo names it. Absolute times mean
// little without it.
func machine() string {
	s := fmt.Sprintf("Machine: %d cores, GOMAXPROCS %d, %s/%s, %s",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	if m := cpuModel(); m != "" {
		s += ", " + m
	}
	return s
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "" where
// there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
