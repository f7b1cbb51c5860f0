#!/usr/bin/env bash
# Stages a real-node run (hack/node/README.md): everything the GPU machine needs, in one
# folder that a device call carries (`carry: [".devwork/node"]`), within the 64 MiB that travels.
#   bin/*.xz, MANIFEST   the node's binaries (hack/node/build.sh --stage)
#   pki/                 a throwaway PKI (hack/node/pki.sh), valid 7 days, never committed
#   rendered.json        what the program renders for the node (hack/node/render.py)
#   site.tar.xz          the kubernetes client, what it requires (site.py: the closure of its
#                        distribution's requirements as the .venv has them) and nvidia-ml-py, for
#                        the machine's Python 3.12 (the client's unused asyncio package left out)
#   lab/                 the lab's packages gpulab and variants and its Pulumi.yaml (the config
#                        schema) from this checkout (the branch under test; the device gets
#                        main's checkout)
#   node.py, run.sh, image.py   the harness
#
# Usage: hack/node/stage.sh [DEST]     (DEST: /work/main/.devwork/node)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-/work/main/.devwork/node}
py=$root/.venv/bin/python
[[ -x $py ]] || { echo "stage.sh: no $py: run make venv" >&2; exit 1; }
cache=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}/node
log() { echo "[node-stage] $*" >&2; }

mkdir -p "$dest"
"$here/build.sh" --stage "$dest"

rm -rf "$dest/pki" && "$here/pki.sh" "$dest/pki"
"$py" "$here/render.py" >"$dest/rendered.json"

# The client's wheels for CPython 3.12 on x86-64 Linux: the kubernetes client, what its
# distribution requires (recursively, as installed in the .venv: site.py) and nvidia-ml-py
# (the lab's host probe), at the .venv's versions.
roots=(kubernetes nvidia-ml-py)
pins=$("$py" "$here/site.py" pins "${roots[@]}")
key=$(printf '%s\n' "$pins" drop=kubernetes/aio | sha256sum | cut -c1-16)
site=$cache/site-$key.tar.xz
if [[ ! -s $site ]]; then
  log "site for Python 3.12: ${pins//$'\n'/ }"
  mkdir -p "$cache"
  "$py" "$here/site.py" build "$site" "${roots[@]}" --drop kubernetes/aio
fi
cp "$site" "$dest/site.tar.xz"

rm -rf "$dest/lab" && mkdir -p "$dest/lab"
# Pulumi.yaml too: the config schema the lab's commands read is its config block (gpulab.config.schema).
(cd "$root" && tar --exclude=__pycache__ -cf - gpulab variants Pulumi.yaml) | tar -C "$dest/lab" -xf -
cp "$here/device/node.py" "$here/device/run.sh" "$here/image.py" "$dest/"
git -C "$root" rev-parse HEAD >"$dest/REVISION" 2>/dev/null || true
total=$(du -sb "$dest" | cut -f1)
log "staged $dest: $(numfmt --to=iec-i --suffix=B "$total") (the device carry's limit is 64 MiB with the checkout)"
