#!/usr/bin/env bash
# Offline machines only: NVIDIA's nvidia-device-plugin chart (gpuStack device-plugin), from the
# Go module github.com/NVIDIA/k8s-device-plugin at $DEVICE_PLUGIN_CHART_OFFLINE_VERSION
# (toolchain/versions.env), fetched into Go's module cache (read-only, verified against
# go.sum's checksum database like any module) and never copied into the checkout. Prints the
# chart's directory (deployments/helm/nvidia-device-plugin, its NFD subchart bundled under
# charts/); the Makefile exports it as GPULAB_DEVICE_PLUGIN_CHART_PATH.
#   toolchain/device-plugin-chart.sh [--path-only]   (--path-only: print the path if cached; fetch nothing)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
v=v${DEVICE_PLUGIN_CHART_OFFLINE_VERSION:?}
command -v go >/dev/null || { echo "device-plugin-chart.sh: no 'go' on PATH: the offline device plugin chart comes from the Go module proxy" >&2; exit 1; }
cache=$(go env GOMODCACHE)
# The module cache escapes capitals with '!' (golang.org/x/mod/module EscapePath).
dir=$cache/github.com/!n!v!i!d!i!a/k8s-device-plugin@$v/deployments/helm/nvidia-device-plugin
if [[ ! -f $dir/Chart.yaml ]]; then
  [[ ${1:-} != --path-only ]] || exit 1
  echo "gpu-lab: toolchain: NVIDIA's device plugin chart $v from the Go module proxy (offline gpuStack device-plugin)" >&2
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download github.com/NVIDIA/k8s-device-plugin@"$v") >&2
fi
[[ -f $dir/Chart.yaml ]] || { echo "device-plugin-chart.sh: no Chart.yaml in $dir after the download" >&2; exit 1; }
echo "$dir"
