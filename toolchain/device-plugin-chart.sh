#!/usr/bin/env bash
# Offline machines only: NVIDIA's nvidia-device-plugin chart (gpuStack device-plugin), from the
# Go module github.com/NVIDIA/k8s-device-plugin at $DEVICE_PLUGIN_CHART_OFFLINE_VERSION
# (toolchain/versions.env), through go-module-chart.sh. Prints the chart's directory
# (deployments/helm/nvidia-device-plugin, its NFD subchart bundled under charts/); the Makefile
# exports it as GPULAB_DEVICE_PLUGIN_CHART_PATH.
#   toolchain/device-plugin-chart.sh [--path-only]   (--path-only: print the path if cached; fetch nothing)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
exec "$here/go-module-chart.sh" github.com/NVIDIA/k8s-device-plugin "v${DEVICE_PLUGIN_CHART_OFFLINE_VERSION:?}" \
  deployments/helm/nvidia-device-plugin "NVIDIA's device plugin chart (offline gpuStack device-plugin)" "$@"
