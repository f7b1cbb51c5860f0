#!/usr/bin/env bash
# Stages the Pulumi side of a `pulumi up` on the real node (toolchain/node/README.md, "The lab's
# own pulumi up"): what the first of two back-to-back device calls carries
# (`carry: [".devwork/pulumi"]`), unpacked there by `bash .devwork/pulumi/unpack.sh` into
# /opt/gpulab-pulumi, where the second call (`run.sh lab`, carrying .devwork/node) finds it.
#   pulumi.tar.xz   the offline toolchain's pulumi CLI, its Python language host (the
#                   project's stand-in) and pulumi-resource-kubernetes, from $GPULAB_CACHE
#                   (make toolchain-tests builds them), one solid archive
#   site.tar.xz     the program's Python packages (requirements.txt and what they need) for
#                   the machine's CPython 3.12, less those its image has (grpcio, protobuf,
#                   PyYAML, Jinja2, MarkupSafe, requests, ...: KINDS.md's list)
#   chart.tar.xz    the GPU Operator chart (GPULAB_CHART_PATH, else ../shared/charts), for
#                   the variant modes that install it; never committed
#   unpack.sh       the first call's command
#
# Usage: toolchain/node/stage-pulumi.sh [DEST]      (DEST: /work/main/.devwork/pulumi)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-/work/main/.devwork/pulumi}
# shellcheck source=../versions.env
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

# The program's packages for CPython 3.12 on x86-64 Linux, resolved from requirements.txt;
# what the machine's image already has is left out (its versions satisfy the pins' ranges).
have="grpcio protobuf PyYAML Jinja2 MarkupSafe requests certifi charset-normalizer idna six python-dateutil"
skey=$( (cat "$root/requirements.txt"; echo "$have") | sha256sum | cut -c1-16)
site=$cache/pulumi-site-$skey.tar.xz
if [[ ! -s $site ]]; then
  t=$(mktemp -d)
  log "site for Python 3.12 from requirements.txt (less: $have)"
  "$py" -m pip install -q --disable-pip-version-check --no-compile --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --target "$t/site" -r "$root/requirements.txt"
  # Each left-out distribution's files, as its RECORD lists them.
  "$py" - "$t/site" $have <<'PY'
import pathlib, re, shutil, sys
site, names = pathlib.Path(sys.argv[1]), {re.sub(r"[-_.]+", "-", n).lower() for n in sys.argv[2:]}
for info in site.glob("*.dist-info"):
    meta = (info / "METADATA").read_text(errors="replace")
    name = re.search(r"^Name: (.+)$", meta, re.M).group(1).strip()
    if re.sub(r"[-_.]+", "-", name).lower() not in names:
        continue
    for line in (info / "RECORD").read_text().splitlines():
        f = site / line.split(",")[0]
        if f.is_file():
            f.unlink()
    shutil.rmtree(info, ignore_errors=True)
for d in sorted((p for p in site.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
    if not any(d.iterdir()):
        d.rmdir()
PY
  rm -rf "$t/site/kubernetes/aio" "$t/site/bin"
  find "$t/site" -name '*_test.py' -delete
  tar -C "$t/site" -cf - . | xz -T2 -9 >"$site.partial" && mv "$site.partial" "$site"
  rm -rf "$t"
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
