#!/usr/bin/env bash
# The call before `run.sh lab-dra` on the lent GPU machine (hack/node/README.md): NVIDIA's
# DRA driver that .devwork/dra carried, into /opt/gpulab-dra (bin/, the chart
# dra-driver-nvidia-gpu/, image/, VERSIONS, MANIFEST), where node.py makes the driver's image and
# the lab finds the chart (gpu-lab:draChartPath). Also run before `run.sh rehearse-lab-dra`.
#   bash .devwork/dra/unpack.sh
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
opt=/opt/gpulab-dra
t0=$SECONDS
rm -rf "$opt" && mkdir -p "$opt/bin"
tar -C "$opt/bin" -xJf "$src/bin/dra.tar.xz"
tar -C "$opt" -xJf "$src/chart.tar.xz"
cp -r "$src/image" "$src/VERSIONS" "$src/MANIFEST" "$opt/"
# Each binary as the manifest has it (archive, binary, version, bytes, sha256).
tail -n +2 "$opt/MANIFEST" | awk -F'\t' -v bin="$opt/bin" '{print $5 "  " bin "/" $2}' | sha256sum -c -
"$opt/bin/gpu-kubelet-plugin" --version 2>&1 | head -3
"$opt/bin/nvidia-cdi-hook" --version 2>&1 | head -2
grep -E '^(name|version|appVersion):' "$opt/dra-driver-nvidia-gpu/Chart.yaml"
echo "unpacked in $((SECONDS - t0)) s: $(du -sh "$opt" | cut -f1) in $opt"
