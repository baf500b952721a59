package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpuSetSize is how many CPUs a unix.CPUSet can name.
const cpuSetSize = int(unsafe.Sizeof(unix.CPUSet{})) * 8

// cpuPlan is how --pin splits the machine's CPUs: the server on the last
// one the bench may use, the bench on the others.
type cpuPlan struct {
	server unix.CPUSet
	client unix.CPUSet
	nCPU   int // the client's
}

// planPinning splits the CPUs this process may run on, or says why it
// cannot: it needs two.
func planPinning() (cpuPlan, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return cpuPlan{}, fmt.Errorf("--pin: reading this process's CPUs: %w", err)
	}
	var cpus []int
	for i := range cpuSetSize {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return cpuPlan{}, fmt.Errorf("--pin: needs at least 2 CPUs, this process may use %d", len(cpus))
	}
	var p cpuPlan
	p.server.Set(cpus[len(cpus)-1])
	for _, c := range cpus[:len(cpus)-1] {
		p.client.Set(c)
	}
	p.nCPU = len(cpus) - 1
	return p, nil
}

// pinClient moves every thread of this process onto the client's CPUs,
// and GOMAXPROCS to their number. Threads the runtime starts later are
// cloned from pinned ones and inherit the set.
func (p cpuPlan) pinClient() error {
	if err := pinThreads(os.Getpid(), &p.client); err != nil {
		return fmt.Errorf("--pin: the bench: %w", err)
	}
	runtime.GOMAXPROCS(p.nCPU)
	return nil
}

// pinServer moves every thread of the server process pid, its I/O
// threads included, onto the server's CPU.
func (p cpuPlan) pinServer(pid int) error {
	if err := pinThreads(pid, &p.server); err != nil {
		return fmt.Errorf("--pin: the server (pid %d): %w", pid, err)
	}
	return nil
}

// pinThreads sets the affinity of every thread of process pid. A thread
// cloned from one not yet pinned while it works would escape, so it reads
// the threads again until a reading finds none it had not pinned.
func pinThreads(pid int, set *unix.CPUSet) error {
	pinned := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || pinned[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it ended
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			pinned[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// String says where each side runs, for the report.
func (p cpuPlan) String() string {
	var server, client []int
	for i := range cpuSetSize {
		if p.server.IsSet(i) {
			server = append(server, i)
		}
		if p.client.IsSet(i) {
			client = append(client, i)
		}
	}
	return fmt.Sprintf("pinned with --pin: the server on CPU %v, the bench on CPUs %v with GOMAXPROCS %d", server, client, p.nCPU)
}
