package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// arrivalOrder tells which of two sockets received bytes first, from the
// kernel rather than from this process's goroutines. Both sockets are
// registered, edge-triggered, with an epoll instance of the probe's own
// (the Go runtime's poller keeps its own registrations). The kernel
// appends a socket to an epoll instance's ready list when bytes arrive,
// and epoll_wait returns the list in that order: the order in which the
// server's writes reached this host, whatever the scheduler does
// afterwards. Edge-triggered, a socket joins the list again only when new
// bytes arrive, so reset can empty the list before a release.
//
// It belongs to the probe's goroutine.
type arrivalOrder struct {
	ep  int
	buf [4]syscall.EpollEvent
}

// epollET is EPOLLET as the uint32 EpollEvent.Events holds; syscall's
// constant is a negative int.
const epollET = 1 << 31

// orderPollSlice bounds each epoll_wait, so that a cancelled probe stops
// waiting soon.
const orderPollSlice = 50 * time.Millisecond

func newArrivalOrder(fds ...int) (*arrivalOrder, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	for _, fd := range fds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | epollET, Fd: int32(fd)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			_ = syscall.Close(ep)
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return &arrivalOrder{ep: ep}, nil
}

// reset forgets what arrived so far: the next first is the first socket
// to receive bytes after it.
func (o *arrivalOrder) reset() error {
	for {
		n, err := o.wait(0)
		if err != nil || n == 0 {
			return err
		}
	}
}

// first waits for bytes on either socket, at most within, and returns the
// descriptor of the one that received them first.
func (o *arrivalOrder) first(ctx context.Context, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return -1, fmt.Errorf("%w: nothing arrived within %v", errNoArrival, within)
		}
		if err := ctx.Err(); err != nil {
			return -1, err
		}
		n, err := o.wait(min(left, orderPollSlice))
		if err != nil {
			return -1, err
		}
		if n > 0 {
			return int(o.buf[0].Fd), nil
		}
	}
}

// wait runs one epoll_wait, retrying when a signal interrupts it.
func (o *arrivalOrder) wait(d time.Duration) (int, error) {
	for {
		// Rounded up: a wait under a millisecond must not become a poll.
		ms := int((d + time.Millisecond - 1) / time.Millisecond)
		n, err := syscall.EpollWait(o.ep, o.buf[:], ms)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("epoll_wait: %w", err)
		}
		return n, nil
	}
}

func (o *arrivalOrder) close() { _ = syscall.Close(o.ep) }
