//go:build !cgo

package main

import "errors"

// NewNVMLSource needs cgo (go-nvml loads libnvidia-ml.so.1 through dlopen); a build
// without it (the unit tests) has no NVML.
func NewNVMLSource(string) (Source, error) {
	return nil, errors.New("built without cgo: no NVML (build with CGO_ENABLED=1)")
}
