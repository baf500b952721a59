package redisproc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopGrace is how long Stop lets redis-server shut down after SIGTERM
// before it kills the process.
const stopGrace = 5 * time.Second

// process is one run of redis-server.
type process struct {
	cmd *exec.Cmd
	// done is closed by the waiter goroutine once cmd.Wait has returned.
	// The waiter is owned by whoever holds the process, and ends when the
	// process does, which stop makes sure of.
	done chan struct{}
	err  error // cmd.Wait's result: written before done is closed, read after
}

// startProcess runs redis-server with the config file at confPath, its
// stdout and stderr appended to the file at logPath.
func startProcess(bin, confPath, logPath string) (*process, error) {
	// The log is a file, not a pipe, so that os/exec needs no goroutine to
	// copy it and the output survives for Start to quote when the server
	// fails. Both streams go there: config errors are printed to stderr
	// before redis-server sets up its logging.
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child keeps its own descriptor

	cmd := exec.Command(bin, confPath)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop ends the process, politely first, and returns once it has exited
// and its waiter goroutine has finished. Calling it again is harmless.
func (p *process) stop() {
	// Signal fails only when the process has already exited, which is
	// what stop wants anyway.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if resumeSignal != nil {
		// A process frozen by Server.Pause acts on SIGTERM only once
		// thawed; thawing a running one does nothing.
		_ = p.cmd.Process.Signal(resumeSignal)
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-p.done:
		return
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exitError describes the process's early exit; done must be closed.
func (p *process) exitError() error {
	return fmt.Errorf("process exited: %v", p.err)
}
