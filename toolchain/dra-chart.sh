#!/usr/bin/env bash
# Offline machines only: NVIDIA's DRA driver chart (gpuStack dra), from the Go module
# sigs.k8s.io/dra-driver-nvidia-gpu at $DRA_CHART_OFFLINE_VERSION (toolchain/versions.env),
# through go-module-chart.sh. Prints the chart's directory (deployments/helm/dra-driver-nvidia-gpu);
# the Makefile exports it as GPULAB_DRA_CHART_PATH.
#   toolchain/dra-chart.sh [--path-only]   (--path-only: print the path if cached; fetch nothing)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
exec "$here/go-module-chart.sh" sigs.k8s.io/dra-driver-nvidia-gpu "v${DRA_CHART_OFFLINE_VERSION:?}" \
  deployments/helm/dra-driver-nvidia-gpu "NVIDIA's DRA driver chart (offline gpuStack dra)" "$@"
