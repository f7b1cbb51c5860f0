#!/usr/bin/env bash
# Stages NVIDIA's DRA driver for the real node (hack/node/README.md, "NVIDIA's DRA driver"):
# what the call before `run.sh lab-dra` carries (`carry: [".devwork/dra"]`), unpacked there by
# `bash .devwork/dra/unpack.sh` into /opt/gpulab-dra, where node.py makes the image and the lab
# finds the chart (gpu-lab:draChartPath). The machine stays warm between the calls.
#   bin/dra.tar.xz, MANIFEST  gpu-kubelet-plugin (sigs.k8s.io/dra-driver-nvidia-gpu) and
#                        nvidia-cdi-hook (the container toolkit its go.mod requires), built by
#                        build.sh from the Go module proxy at versions.env's DRA_DRIVER_VERSION
#   chart.tar.xz         the module's chart deployments/helm/dra-driver-nvidia-gpu at that tag
#                        (toolchain/dra-chart.sh: the same chart the simulated lab installs)
#   image/               what upstream's image holds beside the binaries, from the same module
#                        (deployments/container/Dockerfile): hack/kubelet-plugin-prestart.sh (the
#                        chart's init container runs it), templates/, LICENSE
#   VERSIONS, unpack.sh
#
# Usage: hack/node/stage-dra.sh [DEST]      (DEST: /work/main/.devwork/dra)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-/work/main/.devwork/dra}
# shellcheck source=versions.env
source "$here/versions.env"
log() { echo "[dra-stage] $*" >&2; }
die() { echo "stage-dra.sh: $*" >&2; exit 1; }

mkdir -p "$dest"
"$here/build.sh" --stage-dra "$dest"

chart=$("$root/toolchain/dra-chart.sh")
module=$(cd "$chart/../../.." && pwd)
grep -q "^version: \"\{0,1\}$DRA_DRIVER_VERSION\"\{0,1\}$" "$chart/Chart.yaml" ||
  die "$chart/Chart.yaml is not version $DRA_DRIVER_VERSION"
tar -C "$(dirname "$chart")" --owner=0 --group=0 --mode=u+w -cJf "$dest/chart.tar.xz" "$(basename "$chart")"
rm -rf "$dest/image" && mkdir -p "$dest/image"
install -m 0644 "$module/hack/kubelet-plugin-prestart.sh" "$module/LICENSE" "$dest/image/"
cp -r "$module/templates" "$dest/image/templates" && chmod -R u+w "$dest/image"
hook=$(awk -F'\t' '$2 == "nvidia-cdi-hook" {print $3}' "$dest/MANIFEST")
printf 'DRA_DRIVER_VERSION=%s\nNVIDIA_CDI_HOOK_VERSION=%s\n' "$DRA_DRIVER_VERSION" "$hook" >"$dest/VERSIONS"
cp "$here/device/dra-unpack.sh" "$dest/unpack.sh"
log "staged $dest: $(du -sb "$dest" | cut -f1) bytes (the device carry's limit is 64 MiB)"
