#!/usr/bin/env bash
# Offline machines only: a Helm chart shipped inside a Go module, fetched into Go's module cache
# (read-only, verified against go.sum's checksum database like any module) and never copied
# into the checkout. Prints the chart's directory. Shared by device-plugin-chart.sh and
# dra-chart.sh.
#   toolchain/go-module-chart.sh MODULE VERSION CHART_DIR WHAT [--path-only]
#   (--path-only: print the path if cached; fetch nothing)
set -euo pipefail
module=${1:?module} v=${2:?version} chart=${3:?chart dir} what=${4:?what}
command -v go >/dev/null || { echo "go-module-chart.sh: no 'go' on PATH: the offline $what comes from the Go module proxy" >&2; exit 1; }
cache=$(go env GOMODCACHE)
# The module cache escapes capitals with '!' (golang.org/x/mod/module EscapePath).
escaped=$(printf '%s' "$module" | sed -E 's/([A-Z])/!\L\1/g')
dir=$cache/$escaped@$v/$chart
if [[ ! -f $dir/Chart.yaml ]]; then
  [[ ${5:-} != --path-only ]] || exit 1
  echo "gpu-lab: toolchain: $what $v from the Go module proxy" >&2
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download "$module@$v") >&2
fi
[[ -f $dir/Chart.yaml ]] || { echo "go-module-chart.sh: no Chart.yaml in $dir after the download" >&2; exit 1; }
echo "$dir"
