//go:build !linux

package main

import "errors"

// cpuPlan is --pin's split of the CPUs, which only Linux offers here.
type cpuPlan struct{}

func planPinning() (cpuPlan, error) { return cpuPlan{}, errors.New("--pin: needs Linux") }

func (cpuPlan) pinClient() error    { return nil }
func (cpuPlan) pinServer(int) error { return nil }
func (cpuPlan) String() string      { return "" }
