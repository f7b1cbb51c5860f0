#!/usr/bin/env bash
# Stages NVIDIA's device plugin stack for the real node (hack/node/README.md, "NVIDIA's
# device plugin chart"): what the call before `run.sh lab-nvidia` carries
# (`carry: [".devwork/nvidia"]`), unpacked there by `bash .devwork/nvidia/unpack.sh` into
# /opt/gpulab-nvidia, where node.py finds it (the machine stays warm between the calls).
#   bin/nvidia.tar.xz, MANIFEST   NVIDIA's nvidia-device-plugin, gpu-feature-discovery,
#                        config-manager, mps-control-daemon (k8s-device-plugin) and nfd-master,
#                        nfd-worker, nfd-gc (node-feature-discovery), built by build.sh from the
#                        Go module proxy at versions.env's versions, one solid xz archive
#   chart.tar.xz         NVIDIA's chart deployments/helm/nvidia-device-plugin of the same module
#                        (with the node-feature-discovery subchart it bundles), as the module has it
#   nfd-worker.conf      NFD's example worker config (its image has it at
#                        /etc/kubernetes/node-feature-discovery/nfd-worker.conf)
#   VERSIONS, unpack.sh
#
# Usage: hack/node/stage-nvidia.sh [DEST]      (DEST: /work/main/.devwork/nvidia)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dest=${1:-/work/main/.devwork/nvidia}
# shellcheck source=versions.env
source "$here/versions.env"
log() { echo "[nvidia-stage] $*" >&2; }
die() { echo "stage-nvidia.sh: $*" >&2; exit 1; }

mkdir -p "$dest"
"$here/build.sh" --stage-nvidia "$dest"

# The chart and NFD's worker config, from the modules the binaries were built from.
moddir() { # moddir <module@version>: its directory in the module cache (downloaded if missing)
  (cd "$here/go/nvidia-dp" && go mod download -json "$1") | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
dp=$(moddir "github.com/NVIDIA/k8s-device-plugin@v$NVIDIA_DEVICE_PLUGIN_VERSION")
nfd=$(moddir "sigs.k8s.io/node-feature-discovery@v$NFD_VERSION")
chart=$dp/deployments/helm/nvidia-device-plugin
[[ -f $chart/Chart.yaml ]] || die "no chart in $chart"
grep -q "^version: \"\{0,1\}$NVIDIA_DEVICE_PLUGIN_VERSION\"\{0,1\}$" "$chart/Chart.yaml" ||
  die "$chart/Chart.yaml is not version $NVIDIA_DEVICE_PLUGIN_VERSION"
[[ -f $chart/charts/node-feature-discovery-chart-$NFD_VERSION.tgz ]] ||
  die "the chart does not bundle node-feature-discovery $NFD_VERSION (versions.env's NFD_VERSION): $(ls "$chart/charts")"
tar -C "$(dirname "$chart")" --owner=0 --group=0 --mode=u+w -cJf "$dest/chart.tar.xz" "$(basename "$chart")"
install -m 0644 "$nfd/deployment/components/worker-config/nfd-worker.conf.example" "$dest/nfd-worker.conf"
printf 'NVIDIA_DEVICE_PLUGIN_VERSION=%s\nNFD_VERSION=%s\n' "$NVIDIA_DEVICE_PLUGIN_VERSION" "$NFD_VERSION" >"$dest/VERSIONS"
cp "$here/device/nvidia-unpack.sh" "$dest/unpack.sh"
log "staged $dest: $(du -sb "$dest" | cut -f1) bytes (the device carry's limit is 64 MiB)"
