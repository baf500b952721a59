package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// job is what a worker process is asked to do, passed as JSON in
// workerEnv.
type job struct {
	Addr string `json:"addr"`
	// Do is "workload" (run the mix until Until, recording to
	// Dir/Name.log), "hold" (lock Key and hold it until killed),
	// "queue" (wait for Key, fair mode, until killed) or "chaos" (run
	// Chaos, see TestChaos).
	Do    string `json:"do"`
	Key   string `json:"key,omitempty"`
	Fair  bool   `json:"fair,omitempty"`
	Hold  int64  `json:"hold,omitempty"` // the mix's manager hold, ns
	TTL   int64  `json:"ttl,omitempty"`  // the mix's lock TTL, ns
	Run   string `json:"run,omitempty"`  // the mix's run name
	Dir   string `json:"dir,omitempty"`
	Name  string `json:"name,omitempty"`
	Until int64  `json:"until,omitempty"` // wall-clock ns
	// Chaos is a chaos round's part for the worker (Do "chaos").
	Chaos *chaosPlan `json:"chaos,omitempty"`
}

func (j job) mix() mix {
	m := defaultMix
	m.fair, m.hold, m.run = j.Fair, time.Duration(j.Hold), j.Run
	if j.TTL > 0 {
		m.ttl = time.Duration(j.TTL)
	}
	return m
}

// TestWorkerProcess is the suite's child process: a service instance in
// a process of its own, which a test can SIGKILL. It skips unless started
// by startWorker. It writes "ready" on stdout once its lock is held, or
// queued for, or its workload started.
func TestWorkerProcess(t *testing.T) {
	spec := os.Getenv(workerEnv)
	if spec == "" {
		t.Skip("the suite's worker process, started by other tests")
	}
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		t.Fatal(err)
	}
	if j.Do == "chaos" {
		runChaosWorker(t, *j.Chaos)
		return
	}
	ctx := context.Background()
	in, err := openInstance(ctx, j.Addr, j.mix())
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	switch j.Do {
	case "hold":
		if _, err := in.locker.Lock(ctx, j.Key); err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready")
		select {} // until killed
	case "queue":
		fmt.Println("ready") // the parent watches the queue itself
		_, err := in.locker.Lock(ctx, j.Key)
		t.Fatalf("a queued worker got the lock (%v) before it was killed", err)
	case "workload":
		rec, err := newRecorder(j.Dir, j.Name)
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithDeadline(ctx, time.Unix(0, j.Until))
		defer cancel()
		fmt.Println("ready")
		in.run(runCtx, j.mix(), rec)
		if err := rec.close(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown job %q", j.Do)
	}
}

// worker is a running worker process.
type worker struct {
	cmd    *exec.Cmd
	exited chan error // receives Wait's result once
}

// startWorker runs TestWorkerProcess with j and returns once it says it is
// ready. The process is killed, if still running, when the test ends.
func startWorker(t *testing.T, j job) *worker {
	t.Helper()
	return startWorkerTo(t, j, nil, os.Stderr)
}

// startWorkerTo is startWorker with the worker's stderr passed on to
// stderr, and, unless out is nil, all it writes (stdout and stderr)
// also written to out, for a test to read once the worker has exited.
func startWorkerTo(t *testing.T, j job, out, stderr io.Writer) *worker {
	t.Helper()
	spec, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(spec))
	cmd.Stderr = stderr
	if out != nil {
		cmd.Stderr = io.MultiWriter(stderr, out)
	}
	dieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, exited: make(chan error, 1)}
	ready := make(chan bool, 1)
	go func() {
		buf := make([]byte, len("ready\n"))
		n, _ := stdout.Read(buf)
		ready <- string(buf[:n]) == "ready\n"
		keep := io.Discard
		if out != nil {
			keep = out
			_, _ = out.Write(buf[:n])
		}
		// Drain the rest (the test framework's own lines) until exit.
		_, _ = io.Copy(keep, stdout)
		w.exited <- cmd.Wait()
	}()
	t.Cleanup(func() { w.kill() })
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("worker %s did not start", j.Do)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker %s not ready within 30s", j.Do)
	}
	return w
}

// kill SIGKILLs the worker and waits for it; a worker that has exited is
// only waited for. It may be called more than once.
func (w *worker) kill() {
	if w.exited == nil {
		return
	}
	_ = w.cmd.Process.Kill()
	<-w.exited
	w.exited = nil
}

// wait waits for the worker to exit on its own, up to d, and returns its
// error; one still running then is killed.
func (w *worker) wait(d time.Duration) error {
	if w.exited == nil {
		return nil
	}
	select {
	case err := <-w.exited:
		w.exited = nil
		return err
	case <-time.After(d):
		w.kill()
		return fmt.Errorf("worker still running after %v: killed", d)
	}
}
