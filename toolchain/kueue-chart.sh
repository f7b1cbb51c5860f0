#!/usr/bin/env bash
# Offline machines only: Kueue's chart (queues: true), from the Go module sigs.k8s.io/kueue at
# $KUEUE_VERSION (toolchain/versions.env), through go-module-chart.sh. Prints the chart's
# directory (charts/kueue); the Makefile exports it as GPULAB_KUEUE_CHART_PATH.
#   toolchain/kueue-chart.sh [--path-only]   (--path-only: print the path if cached; fetch nothing)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
exec "$here/go-module-chart.sh" sigs.k8s.io/kueue "v${KUEUE_VERSION:?}" charts/kueue \
  "Kueue's chart (offline queues)" "$@"
