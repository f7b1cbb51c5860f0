package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// GPU is one physical GPU as the plugin advertises it: its NVML UUID (the device ID the
// kubelet sees, as NVIDIA's device plugin uses), NVML index, product name and minor number
// (/dev/nvidia<minor>).
type GPU struct {
	UUID  string
	Index int
	Name  string
	Minor int
}

// Health is one GPU's health as ListAndWatch reports it, with the reason when unhealthy.
type Health struct {
	Healthy bool
	Reason  string
}

// Source lists the node's GPUs and says, on each call of Check, which of them are unhealthy
// now (UUID -> reason). NVML is the real source (nvml.go); the tests use a fake.
type Source interface {
	// List returns every GPU, in NVML index order. An error means the plugin cannot serve.
	List() ([]GPU, error)
	// Check returns the GPUs that are unhealthy now, keyed by UUID, with the reason
	// (an NVML error, a critical XID). GPUs not in the map are healthy.
	Check() map[string]string
	// Close releases the source (NVML shutdown).
	Close()
}

// Faults reads the fault-injection file: the harness's way to make a GPU report Unhealthy
// for the negative test, since a real GPU fault cannot be caused on purpose. Each line is a
// GPU UUID or "all"; '#' starts a comment. A missing file means no fault (nil, nil).
func Faults(path string) (map[string]bool, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fault file %s: %w", path, err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out[line] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("fault file %s: %w", path, err)
	}
	return out, nil
}

// Merge combines the source's verdicts and the injected faults into each GPU's health.
func Merge(gpus []GPU, unhealthy map[string]string, faults map[string]bool, faultFile string) map[string]Health {
	out := make(map[string]Health, len(gpus))
	for _, g := range gpus {
		switch {
		case unhealthy[g.UUID] != "":
			out[g.UUID] = Health{false, unhealthy[g.UUID]}
		case faults[g.UUID] || faults["all"]:
			out[g.UUID] = Health{false, "fault injected through " + faultFile}
		default:
			out[g.UUID] = Health{Healthy: true}
		}
	}
	return out
}

// Describe is one line for the log: "GPU-a Healthy, GPU-b Unhealthy (reason)".
func Describe(h map[string]Health) string {
	ids := make([]string, 0, len(h))
	for id := range h {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		if h[id].Healthy {
			parts = append(parts, id+" Healthy")
		} else {
			parts = append(parts, fmt.Sprintf("%s Unhealthy (%s)", id, h[id].Reason))
		}
	}
	return strings.Join(parts, ", ")
}

// Equal says whether two health maps report the same thing (reasons included).
func Equal(a, b map[string]Health) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
