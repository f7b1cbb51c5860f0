#!/usr/bin/env bash
# Stages the Pulumi side of a `pulumi up` on the real node (hack/node/README.md, "The lab's
# own pulumi up"): what the first of two back-to-back device calls carries
# (`carry: [".devwork/pulumi"]`), unpacked there by `bash .devwork/pulumi/unpack.sh` into
# /opt/gpulab-pulumi, where the second call (`run.sh lab`, carrying .devwork/node) finds it.
#   pulumi.tar.xz   the offline toolchain's pulumi CLI, its Python language host (the
#                   project's stand-in) and pulumi-resource-kubernetes, from $GPULAB_CACHE
#                   (make toolchain-tests builds them), one solid archive
#   site.tar.xz     the program's Python packages for the machine's CPython 3.12:
#                   requirements.txt and everything they require (site.py), every one carried
#   chart.tar.xz    the GPU Operator chart (GPULAB_CHART_PATH, else ../shared/charts), for
#                   the variant modes that install it; never committed
#   unpack.sh       the first call's command
#
# Usage: hack/node/stage-pulumi.sh [DEST]      (DEST: /work/main/.devwork/pulumi)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-/work/main/.devwork/pulumi}
# shellcheck source=../../toolchain/versions.env
source "$root/toolchain/versions.env"
cache_root=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}
cache=$cache_root/node
py=$root/.venv/bin/python
log() { echo "[pulumi-stage] $*" >&2; }
die() { echo "stage-pulumi.sh: $*" >&2; exit 1; }
[[ -x $py ]] || die "no $py: run make venv"
cli=$cache_root/pulumi/pulumi-v$PULUMI_VERSION
k8s=$cache_root/pulumi/pulumi-resource-kubernetes-v$PULUMI_KUBERNETES_VERSION
[[ -f $cli/.complete && -f $k8s/.complete ]] || die "the offline Pulumi toolchain is not built in $cache_root: make toolchain-tests"
mkdir -p "$dest" "$cache/xz"

# One solid archive: the CLI and the provider share the Pulumi SDK's code.
tmp=$(mktemp -d)
mkdir -p "$tmp/pulumi-v$PULUMI_VERSION/bin" "$tmp/pulumi-resource-kubernetes-v$PULUMI_KUBERNETES_VERSION/bin"
cp -a "$cli/bin/." "$tmp/pulumi-v$PULUMI_VERSION/bin/"
cp -a "$k8s/bin/." "$tmp/pulumi-resource-kubernetes-v$PULUMI_KUBERNETES_VERSION/bin/"
key=$(cd "$tmp" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
if [[ ! -s $cache/xz/pulumi-$key.tar.xz ]]; then
  log "xz pulumi v$PULUMI_VERSION and pulumi-resource-kubernetes v$PULUMI_KUBERNETES_VERSION (minutes on 2 cores)"
  (cd "$tmp" && tar --owner=0 --group=0 --mtime=@0 -cf - . | xz -T1 --lzma2=preset=9,dict=256MiB) >"$cache/xz/pulumi-$key.tar.xz.partial"
  mv "$cache/xz/pulumi-$key.tar.xz.partial" "$cache/xz/pulumi-$key.tar.xz"
fi
rm -rf "$tmp"
cp "$cache/xz/pulumi-$key.tar.xz" "$dest/pulumi.tar.xz"

# The program's packages for CPython 3.12 on x86-64 Linux: requirements.txt's and everything
# they require, recursively, at the .venv's versions (site.py), installed into a new folder;
# staging stops if a module the program, the policy pack or the toolchain's stand-ins import is
# in none of them. Nothing is assumed of the machine's own Python (its virtualenv's packages
# are not the checkout's: 2026-12-03's run lacked PyYAML, grpcio, protobuf, Jinja2, ...).
srcs=(gpulab variants components program policy ops __main__.py hack/offline/langhost hack/offline/command
  hack/offline/pulumi_protos.py toolchain/decide.py)
pins=$(cd "$root" && "$py" "$here/site.py" pins -r requirements.txt --check-imports "${srcs[@]}")
skey=$(printf '%s\n' "$pins" drop=kubernetes/aio | sha256sum | cut -c1-16)
site=$cache/pulumi-site-$skey.tar.xz
if [[ ! -s $site ]]; then
  log "site for Python 3.12: ${pins//$'\n'/ }"
  (cd "$root" && "$py" "$here/site.py" build "$site" -r requirements.txt --drop kubernetes/aio)
fi
cp "$site" "$dest/site.tar.xz"

chart=${GPULAB_CHART_PATH:-$root/../shared/charts/gpu-operator}
if [[ -f $chart/Chart.yaml ]]; then
  tar -C "$(dirname "$chart")" -cJf "$dest/chart.tar.xz" "$(basename "$chart")"
else
  log "no chart at $chart: the variant modes that install the operator will stop in preflight"
fi
cp "$here/device/pulumi-unpack.sh" "$dest/unpack.sh"
printf 'PULUMI_VERSION=%s\nPULUMI_KUBERNETES_VERSION=%s\n' "$PULUMI_VERSION" "$PULUMI_KUBERNETES_VERSION" >"$dest/VERSIONS"
log "staged $dest: $(du -sb "$dest" | cut -f1) bytes"
