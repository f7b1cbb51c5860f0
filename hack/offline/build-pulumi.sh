#!/usr/bin/env bash
# The offline Pulumi toolchain, for machines with no usable pulumi CLI (toolchain/decide.py
# decides; toolchain/setup.sh calls this). Built from the Go module proxy and PyPI:
#   pulumi                         CLI, github.com/pulumi/pulumi/pkg/v3 at PULUMI_VERSION
#   pulumi-resource-kubernetes     provider, github.com/pulumi/pulumi-kubernetes/provider/v4 (stock)
#   pulumi-language-python         this project's Python language host (hack/offline/langhost):
#                                  the upstream host module is not served by the proxy
#   pulumi-resource-command        this project's stand-in for pulumi-command's provider
#                                  (hack/offline/command): not served by the proxy either
# Layout: one cache directory per component and version under $GPULAB_CACHE/pulumi;
# $GPULAB_CACHE/bin/pulumi links to the CLI. The language host is a *bundled* plugin, so it
# sits next to the CLI binary, where the engine looks for it. The providers are installed
# into the plugin cache of $PULUMI_HOME (the CLI's default, ~/.pulumi, unless you set it)
# under the versions the PyPI SDKs ask for. A component whose .complete marker exists is
# not rebuilt, so a warm run takes seconds.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../toolchain/versions.env
. "$root/toolchain/versions.env"
cache=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}
bin="$cache/bin"
export PULUMI_SKIP_UPDATE_CHECK=true
mkdir -p "$bin"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { printf '[toolchain] %s\n' "$*" >&2; }
need_go() {
  command -v go >/dev/null 2>&1 || {
    log "go is not on PATH: install Go >= 1.26 (https://go.dev/doc/install), or a pulumi >= $PULUMI_CLI_FLOOR (then nothing is built)"
    exit 2
  }
}
# build_wrapper NAME VERSION WRAPPER_DIR PACKAGE LDFLAGS [prepare-fn]
# Builds PACKAGE from a copy of WRAPPER_DIR into $cache/pulumi/NAME-VERSION/bin/NAME.
build_wrapper() {
  local name=$1 version=$2 wrapper=$3 pkg=$4 ldflags=$5 prepare=${6:-}
  local dest="$cache/pulumi/$name-$version"
  [[ -f "$dest/.complete" ]] && return
  need_go
  rm -rf "$dest"
  mkdir -p "$dest/bin" "$dest/src"
  cp "$wrapper"/go.mod "$wrapper"/go.sum "$dest/src/"
  cp "$wrapper"/*.go "$dest/src/" 2>/dev/null || true
  if [[ -n "$prepare" ]]; then (cd "$dest/src" && "$prepare"); fi
  log "building $name $version (a cold build takes several minutes on 2 cores)"
  local t0=$SECONDS
  (cd "$dest/src" && go build -trimpath -ldflags "$ldflags" -o "$dest/bin/$name" "$pkg")
  log "built $name $version in $((SECONDS - t0))s, $(du -h "$dest/bin/$name" | cut -f1)"
  echo "$((SECONDS - t0))" >"$dest/.build-seconds"
  touch "$dest/.complete"
}

# The provider's schema-embed.json: upstream's schema.json with .version set (what the
# upstream generate.go does at release time); terraform-mapping-embed.json: minified.
gen_k8s_embeds() {
  local dir
  # On a cold module cache .Dir is empty until the module is downloaded.
  go mod download github.com/pulumi/pulumi-kubernetes/provider/v4
  dir=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)
  [[ -d "$dir" ]] || { log "provider module not found in the module cache"; exit 1; }
  python3 - "$dir/cmd/pulumi-resource-kubernetes" "$PULUMI_KUBERNETES_VERSION" <<'PY'
import json, sys
src, version = sys.argv[1], sys.argv[2]
schema = json.load(open(f"{src}/schema.json"))
schema["version"] = version
json.dump(schema, open("schema-embed.json", "w"), separators=(",", ":"))
json.dump(json.load(open(f"{src}/terraform-mapping.json")), open("terraform-mapping-embed.json", "w"),
          separators=(",", ":"))
PY
}

# Our language host beside our CLI (bundled-plugin location). Small files: refreshed always.
install_langhost() {
  local dir=$1 sdkdir
  need_go
  (cd "$here/go/pulumi" && go mod download github.com/pulumi/pulumi/sdk/v3)
  sdkdir=$(cd "$here/go/pulumi" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)
  install -m 0644 "$sdkdir/python/cmd/pulumi-language-python-exec" "$dir/pulumi-language-python-exec"
  install -m 0644 "$here/langhost/pulumi_language_python.py" "$dir/pulumi_language_python.py"
  install -m 0644 "$here/pulumi_protos.py" "$dir/pulumi_protos.py"
  # No dynamic providers in this program: the pulumi.dynamic shim is not installed.
  rm -f "$dir/pulumi-resource-pulumi-python"
  printf '%s+gpulab\n' "$PULUMI_VERSION" >"$dir/VERSION"
  cat >"$dir/pulumi-language-python" <<'SH'
#!/bin/sh
# gpu-lab's Python language host. It needs grpcio and the pulumi SDK: it runs on
# $GPULAB_PYTHON, else the program's .venv (the engine starts it in the program
# directory), else python3.
py=${GPULAB_PYTHON:-}
[ -z "$py" ] && [ -x "$PWD/.venv/bin/python" ] && py="$PWD/.venv/bin/python"
exec "${py:-python3}" "$(dirname "$(readlink -f "$0")")/pulumi_language_python.py" "$@"
SH
  chmod 0755 "$dir/pulumi-language-python"
}

build_wrapper pulumi "v$PULUMI_VERSION" "$here/go/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
  "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION"
install_langhost "$cache/pulumi/pulumi-v$PULUMI_VERSION/bin"
ln -sfn "$cache/pulumi/pulumi-v$PULUMI_VERSION/bin/pulumi" "$bin/pulumi"
# Earlier layouts linked plugins into $bin; on PATH they would shadow the ones below.
rm -f "$bin/pulumi-language-python" "$bin/pulumi-resource-pulumi-python" "$bin/pulumi-resource-kubernetes"

kver="v$PULUMI_KUBERNETES_VERSION"
build_wrapper pulumi-resource-kubernetes "$kver" "$here/go/kubernetes" . \
  "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$kver" gen_k8s_embeds
provider_bin="$cache/pulumi/pulumi-resource-kubernetes-$kver/bin/pulumi-resource-kubernetes"
installed="${PULUMI_HOME:-$HOME/.pulumi}/plugins/resource-kubernetes-$kver"
if ! cmp -s "$provider_bin" "$installed/pulumi-resource-kubernetes"; then
  rm -rf "$installed" "$installed.lock"
  # --file: install this binary under that version; no registry is asked.
  "$bin/pulumi" plugin install resource kubernetes "$kver" --file "$provider_bin" >&2
fi
"$here/command/install.sh" "$bin/pulumi"

log "offline toolchain ready: $bin/pulumi, plugins in ${PULUMI_HOME:-$HOME/.pulumi}/plugins"
"$bin/pulumi" version >&2
"$bin/pulumi" plugin ls >&2
