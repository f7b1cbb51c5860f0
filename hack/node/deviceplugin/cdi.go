package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// CDISpec is the part of a CDI specification the plugin reads: its kind
// (vendor/class, "nvidia.com/gpu") and device names. The spec is the one
// `nvidia-ctk cdi generate --format=json` wrote (CDI spec format: cncf-tags/
// container-device-interface SPEC.md: cdiVersion, kind, devices[].name,
// containerEdits); the container runtime (containerd's CRI, cdi_spec_dirs) reads
// the same file to inject the device nodes, the driver libraries and nvidia-smi.
type CDISpec struct {
	Version string `json:"cdiVersion"`
	Kind    string `json:"kind"`
	Devices []struct {
		Name string `json:"name"`
	} `json:"devices"`
}

// LoadCDISpec reads and checks a CDI spec file in JSON.
func LoadCDISpec(path string) (*CDISpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CDI spec: %w (generate it first: nvidia-ctk cdi generate --format=json --output=%s)", err, path)
	}
	var s CDISpec
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("CDI spec %s is not JSON: %w (write it with nvidia-ctk cdi generate --format=json)", path, err)
	}
	if s.Version == "" || !strings.Contains(s.Kind, "/") || len(s.Devices) == 0 {
		return nil, fmt.Errorf("CDI spec %s: want cdiVersion, a kind vendor/class and devices, got cdiVersion=%q kind=%q and %d devices", path, s.Version, s.Kind, len(s.Devices))
	}
	return &s, nil
}

// Names maps each GPU's UUID to the fully qualified CDI device name the runtime
// resolves ("nvidia.com/gpu=GPU-..."): the device named by the UUID (nvidia-ctk's
// "uuid" device-name strategy) when the spec has it, else the one named by the NVML
// index ("index" strategy). A GPU the spec does not name is an error: containerd
// would refuse the container ("unresolvable CDI devices").
func (s *CDISpec) Names(gpus []GPU) (map[string]string, error) {
	have := map[string]bool{}
	for _, d := range s.Devices {
		have[d.Name] = true
	}
	out := make(map[string]string, len(gpus))
	var missing []string
	for _, g := range gpus {
		switch idx := fmt.Sprint(g.Index); {
		case have[g.UUID]:
			out[g.UUID] = s.Kind + "=" + g.UUID
		case have[idx]:
			out[g.UUID] = s.Kind + "=" + idx
		default:
			missing = append(missing, fmt.Sprintf("%s (index %d)", g.UUID, g.Index))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the CDI spec (kind %s) names no device for %s: regenerate it with nvidia-ctk cdi generate", s.Kind, strings.Join(missing, ", "))
	}
	return out, nil
}
