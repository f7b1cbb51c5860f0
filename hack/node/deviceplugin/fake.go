package main

import "fmt"

// fakeSource stands in for NVML where there is no GPU: the harness's rehearsal on this
// project's own machines (toolchain/node/device/node.py rehearse), never a real node. Its
// GPUs carry the placeholder UUIDs the lab's captures use.
type fakeSource struct{ n int }

// NewFakeSource is a Source of n GPUs that are always healthy (the fault file still applies).
func NewFakeSource(n int) Source { return fakeSource{n} }

func (f fakeSource) List() ([]GPU, error) {
	gpus := make([]GPU, f.n)
	for i := range gpus {
		gpus[i] = GPU{UUID: fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i), Index: i, Name: "simulated (no NVML)", Minor: i}
	}
	return gpus, nil
}

func (fakeSource) Check() map[string]string { return map[string]string{} }
func (fakeSource) Close()                   {}
