#!/usr/bin/env bash
# The call before `run.sh lab-nvidia` on the lent GPU machine (hack/node/README.md): unpack
# NVIDIA's device plugin stack that .devwork/nvidia carried into /opt/gpulab-nvidia (bin/, the
# chart nvidia-device-plugin/, nfd-worker.conf, VERSIONS), where node.py makes the images and the
# lab finds the chart (gpu-lab:devicePluginChartPath). Also run by `run.sh rehearse-*-nvidia`'s
# user on this project's machines before the rehearsal.
#   bash .devwork/nvidia/unpack.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
opt=/opt/gpulab-nvidia
rm -rf "$opt"
mkdir -p "$opt/bin"
t0=$SECONDS
tar -C "$opt/bin" -xJf "$here/bin/nvidia.tar.xz"
tar -C "$opt" -xJf "$here/chart.tar.xz"
cp "$here/VERSIONS" "$here/nfd-worker.conf" "$here/MANIFEST" "$opt/"
# Every binary is the one the manifest names.
tail -n +2 "$opt/MANIFEST" | while IFS=$'\t' read -r _ bin version _ sum; do
  echo "$sum  $opt/bin/$bin" | sha256sum -c --quiet - || { echo "unpack.sh: $bin differs from MANIFEST" >&2; exit 1; }
  echo "$bin $version"
done
"$opt/bin/nvidia-device-plugin" --version | head -2
"$opt/bin/nfd-worker" -version
grep -E '^(name|version):' "$opt/nvidia-device-plugin/Chart.yaml"
ls "$opt/nvidia-device-plugin/charts"
echo "unpacked in $((SECONDS - t0)) s: $(du -sh "$opt" | cut -f1) in $opt"
