#!/usr/bin/env bash
# Builds (or finds) the Pulumi toolchain the lab needs, offline, from the Go module proxy:
#   pulumi                      CLI, github.com/pulumi/pulumi/pkg/v3 at PULUMI_VERSION
#   pulumi-resource-kubernetes  provider, github.com/pulumi/pulumi-kubernetes/provider/v4
#   pulumi-language-python      this project's Python language host (toolchain/langhost)
#   pulumi-resource-pulumi-python  dynamic-provider shim (from the sdk/v3 module zip)
# Output: one cache directory per component and version under $GPULAB_CACHE/pulumi, and
# $GPULAB_CACHE/bin with links to what the current pins select. A component whose
# .complete marker exists is not rebuilt, so a warm run takes seconds.
# A `pulumi` of the pinned version already on PATH (the normal case on a user's machine)
# is used as it is.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
cache=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}
bin="$cache/bin"
mkdir -p "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { printf '[toolchain] %s\n' "$*" >&2; }
need_go() {
  command -v go >/dev/null 2>&1 || {
    log "go is not on PATH: install Go >= 1.26 (https://go.dev/doc/install) or put a pulumi ${PULUMI_VERSION} on PATH"
    exit 2
  }
}
# build_wrapper NAME VERSION WRAPPER_DIR PACKAGE LDFLAGS [prepare-fn]
# Builds PACKAGE from a copy of WRAPPER_DIR into $cache/pulumi/NAME-VERSION/bin/NAME.
build_wrapper() {
  local name=$1 version=$2 wrapper=$3 pkg=$4 ldflags=$5 prepare=${6:-}
  local dest="$cache/pulumi/$name-$version"
  if [[ -f "$dest/.complete" ]]; then
    ln -sf "$dest/bin/$name" "$bin/$name"
    return
  fi
  need_go
  rm -rf "$dest"
  mkdir -p "$dest/bin" "$dest/src"
  cp "$wrapper"/go.mod "$wrapper"/go.sum "$dest/src/"
  cp "$wrapper"/*.go "$dest/src/" 2>/dev/null || true
  if [[ -n "$prepare" ]]; then (cd "$dest/src" && "$prepare"); fi
  log "building $name $version (cold builds take minutes on 2 cores)"
  local t0=$SECONDS
  (cd "$dest/src" && go build -trimpath -ldflags "$ldflags" -o "$dest/bin/$name" "$pkg")
  log "built $name $version in $((SECONDS - t0))s, $(du -h "$dest/bin/$name" | cut -f1)"
  touch "$dest/.complete"
  ln -sf "$dest/bin/$name" "$bin/$name"
}

# The provider's schema-embed.json: upstream's schema.json with .version set (what the
# upstream generate.go does at release time); terraform-mapping-embed.json: minified.
gen_k8s_embeds() {
  local dir
  dir=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)
  python3 - "$dir/cmd/pulumi-resource-kubernetes" "$PULUMI_KUBERNETES_VERSION" <<'EOF'
import json, sys
src, version = sys.argv[1], sys.argv[2]
schema = json.load(open(f"{src}/schema.json"))
schema["version"] = version
json.dump(schema, open("schema-embed.json", "w"), separators=(",", ":"))
json.dump(json.load(open(f"{src}/terraform-mapping.json")), open("terraform-mapping-embed.json", "w"),
          separators=(",", ":"))
EOF
}

cli_ok() {
  command -v pulumi >/dev/null 2>&1 || return 1
  local p
  p=$(command -v pulumi)
  [[ "$p" == "$bin/pulumi" ]] && return 1
  [[ "$(pulumi version 2>/dev/null)" == "v${PULUMI_VERSION}" ]]
}

if cli_ok; then
  log "using $(command -v pulumi) (v${PULUMI_VERSION}) from PATH"
  ln -sf "$(command -v pulumi)" "$bin/pulumi"
else
  build_wrapper pulumi "v$PULUMI_VERSION" "$here/go/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
    "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION"
fi

build_wrapper pulumi-resource-kubernetes "v$PULUMI_KUBERNETES_VERSION" "$here/go/kubernetes" . \
  "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=v$PULUMI_KUBERNETES_VERSION" \
  gen_k8s_embeds

# Language host and dynamic-provider shim: small files, refreshed on every run.
lh="$cache/pulumi/langhost-v$PULUMI_VERSION"
mkdir -p "$lh"
sdkdir=$(cd "$here/go/pulumi" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
install -m 0644 "$sdkdir/python/cmd/pulumi-language-python-exec" "$lh/pulumi-language-python-exec"
install -m 0755 "$sdkdir/python/dist/pulumi-resource-pulumi-python" "$lh/pulumi-resource-pulumi-python"
install -m 0644 "$here/langhost/pulumi_language_python.py" "$lh/pulumi_language_python.py"
printf '%s+gpulab\n' "$PULUMI_VERSION" >"$lh/VERSION"
cat >"$lh/pulumi-language-python" <<'EOF'
#!/bin/sh
# gpu-lab's Python language host. It needs grpcio and the pulumi SDK: it runs on
# $GPULAB_PYTHON, else the program's .venv (the engine starts it in the program
# directory), else python3.
py=${GPULAB_PYTHON:-}
[ -z "$py" ] && [ -x "$PWD/.venv/bin/python" ] && py="$PWD/.venv/bin/python"
exec "${py:-python3}" "$(dirname "$(readlink -f "$0")")/pulumi_language_python.py" "$@"
EOF
chmod 0755 "$lh/pulumi-language-python"
for f in pulumi-language-python pulumi-resource-pulumi-python; do ln -sf "$lh/$f" "$bin/$f"; done

log "toolchain ready in $bin:"
"$bin/pulumi" version >&2
