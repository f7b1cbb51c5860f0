#!/usr/bin/env bash
# The first of the two back-to-back calls of a `pulumi up` on the real node
# (hack/node/README.md): unpack what .devwork/pulumi carried into /opt/gpulab-pulumi, in
# the offline toolchain's cache layout ($GPULAB_CACHE/pulumi/<name>-<version>/bin with its
# .complete marker, $GPULAB_CACHE/bin/pulumi), so that the second call (`run.sh lab`) finds a
# complete offline toolchain and builds nothing (toolchain/decide.py: offline_built).
#   bash .devwork/pulumi/unpack.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=/dev/null
source "$here/VERSIONS"
opt=/opt/gpulab-pulumi
rm -rf "$opt"
mkdir -p "$opt/cache/pulumi" "$opt/cache/bin" "$opt/site"
t0=$SECONDS
tar -C "$opt/cache/pulumi" -xJf "$here/pulumi.tar.xz"
for d in "$opt"/cache/pulumi/*/; do touch "$d/.complete"; done
ln -sfn "$opt/cache/pulumi/pulumi-v$PULUMI_VERSION/bin/pulumi" "$opt/cache/bin/pulumi"
tar -C "$opt/site" -xJf "$here/site.tar.xz"
[[ ! -f $here/chart.tar.xz ]] || tar -C "$opt" -xJf "$here/chart.tar.xz"
"$opt/cache/bin/pulumi" version
# Every module the program needs comes from the carried site, none from the machine's own.
# -S: no site-packages and no .pth files of the machine (its image imports certifi at start-up).
python3 -S - <<'PY'
import importlib, sys
sys.path.insert(0, "/opt/gpulab-pulumi/site")
for mod in ("pulumi", "pulumi_kubernetes", "pulumi_command", "pulumi_policy", "kubernetes", "yaml",
            "grpc", "google.protobuf", "jinja2", "markupsafe", "six", "dateutil", "certifi", "semver"):
    f = importlib.import_module(mod).__file__ or ""
    print(f"{mod}: {f}")
    if not f.startswith("/opt/gpulab-pulumi/site/"):
        sys.exit(f"{mod} is not the carried one: {f}")
PY
echo "unpacked in $((SECONDS - t0)) s: $(du -sh "$opt" | cut -f1) in $opt"
