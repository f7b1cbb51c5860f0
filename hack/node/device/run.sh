#!/usr/bin/env bash
# The one command of a real-node run on the lent GPU machine (hack/node/README.md):
#   bash .devwork/node/run.sh [whole|fleet|lab|lab-nvidia|lab-dra|rehearse|rehearse-fleet|rehearse-lab|rehearse-lab-nvidia|rehearse-chart-nvidia|rehearse-lab-dra]
# (the *-nvidia modes need NVIDIA's stack unpacked first: bash .devwork/nvidia/unpack.sh; the *-dra
# modes NVIDIA's DRA driver: bash .devwork/dra/unpack.sh)
# Results: $OUT/summary.json, $OUT/harness.log, $OUT/work.tar.gz (every log and document).
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OUT=${OUT:-/tmp/gpulab-node-out}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
exec "${GPULAB_NODE_PYTHON:-python3}" "$here/node.py" "${1:-whole}"
