#!/usr/bin/env bash
# make toolchain: decide which Pulumi toolchain this machine uses (toolchain/decide.py), say
# which and why, then build or install only what that needs:
#   user mode, GPU stacks   nothing (your pulumi, plugins the standard way)
#   offline mode            hack/offline/build-pulumi.sh (CLI, Kubernetes provider, stand-ins)
#   sim stack, or --for tests   the simulated control plane: toolchain/sim/fetch.py downloads
#                               the pinned release binaries (checksums verified) where the
#                               release servers answer, else runs toolchain/sim/build.sh
# Usage: toolchain/setup.sh --stack STACK [--for lab|tests]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stack=${GPULAB_STACK:-sim}
purpose=lab
while [[ $# -gt 0 ]]; do
  case $1 in
    --stack) stack=$2; shift 2 ;;
    --for) purpose=$2; shift 2 ;;
    *) echo "usage: toolchain/setup.sh --stack STACK [--for lab|tests]" >&2; exit 2 ;;
  esac
done
decision=$(python3 "$here/decide.py" --stack "$stack" --for "$purpose" --shell) || exit 1
eval "$decision"
echo "gpu-lab: toolchain: $GPULAB_TOOLCHAIN_REASON" >&2
[[ $GPULAB_TOOLCHAIN_MODE == offline ]] &&
  echo "gpu-lab: toolchain: offline stand-ins (hack/offline/): the Python language host and the command provider" >&2
for part in $GPULAB_TOOLCHAIN_BUILD; do
  case $part in
    pulumi) "$here/../hack/offline/build-pulumi.sh" ;;
    sim)
      python3 "$here/sim/fetch.py"
      # Kueue's controller (queues: true runs it as a process of the sim): no release binary
      # exists, so it is built from the Go module (once, cached by version). Without Go the
      # sim still works; a stack with queues stops in preflight saying so.
      "$here/sim/build.sh" kueue ||
        echo "gpu-lab: toolchain: no Kueue controller (toolchain/sim/build.sh kueue needs Go): queues: true on the simulated lab will stop in preflight" >&2
      ;;
  esac
done
# The device plugin chart offline (gpuStack device-plugin): for the tests, and for a sim stack
# whose chart cannot come from NVIDIA's repository here; a connected machine's lab uses the repository.
# Without Go (a connected machine that downloads the sim's release binaries) there is none: the
# device-plugin end-to-end test then skips and says why; CI builds with Go and has it.
if [[ $purpose == tests ]]; then
  "$here/device-plugin-chart.sh" >/dev/null ||
    echo "gpu-lab: toolchain: no offline nvidia-device-plugin chart (toolchain/device-plugin-chart.sh needs Go): the device-plugin end-to-end test will skip" >&2
  "$here/dra-chart.sh" >/dev/null ||
    echo "gpu-lab: toolchain: no offline dra-driver-nvidia-gpu chart (toolchain/dra-chart.sh needs Go): the DRA end-to-end test will skip" >&2
  "$here/kueue-chart.sh" >/dev/null ||
    echo "gpu-lab: toolchain: no offline Kueue chart (toolchain/kueue-chart.sh needs Go): the queues end-to-end test will skip" >&2
fi
[[ -n "$GPULAB_TOOLCHAIN_BUILD" ]] || echo "gpu-lab: toolchain: nothing to build for the $stack stack" >&2
