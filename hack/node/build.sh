#!/usr/bin/env bash
# Builds the real-node harness's binaries (hack/node; workplace only) from the Go
# module proxy and this checkout, stripped (-s -w, -trimpath), cached by version:
#   kube          one multi-call binary: kube-apiserver, kube-controller-manager,
#                 kube-scheduler, kubelet (k8s.io/kubernetes v$KUBERNETES_VERSION)
#   containerd    containerd + ctr in one binary (containerd v$CONTAINERD_VERSION)
#   shim          containerd-shim-runc-v2 (same module, static, as upstream builds it)
#   runc          runc v$RUNC_VERSION (cgo: its nsenter is C; seccomp, static; needs libseccomp-dev)
#   toolkit       nvidia-ctk and nvidia-container-runtime v$NVIDIA_CONTAINER_TOOLKIT_VERSION (cgo:
#                 NVML; `cdi generate`, `runtime configure`, the CDI hooks:
#                 --nvidia-cdi-hook-path=nvidia-ctk; the runtime in its cdi mode)
#   nvidia-dp     NVIDIA's k8s-device-plugin v$NVIDIA_DEVICE_PLUGIN_VERSION: nvidia-device-plugin,
#                 gpu-feature-discovery, config-manager, mps-control-daemon (cgo: NVML by dlopen)
#   nfd           node-feature-discovery v$NFD_VERSION: nfd-master, nfd-worker, nfd-gc (static)
#   dra           NVIDIA's DRA driver v$DRA_DRIVER_VERSION (sigs.k8s.io/dra-driver-nvidia-gpu):
#                 gpu-kubelet-plugin (cgo: NVML by dlopen, its Makefile's flags), and
#                 nvidia-cdi-hook of the container toolkit its go.mod requires (its image's)
#   cni           the CNI plugins bridge, host-local, loopback v$CNI_PLUGINS_VERSION
#   deviceplugin  hack/node/deviceplugin (the project's own, cgo: NVML)
#   native        gpulab-vectoradd and gpulab-pause (C, this checkout)
# etcd is the simulated lab's (toolchain/sim/build.sh, same pin): copied, never rebuilt here.
#
# Usage: hack/node/build.sh [--update] [component...]     (default: all)
#        hack/node/build.sh --stage DIR                    (build if needed, then stage)
#   --update   regenerate the wrappers' go.mod/go.sum from the versions files (commit them)
#   --mod-only only (re)generate the wrappers' go.mod/go.sum; build nothing
#   --stage    write DIR/bin/node-kube.tar.xz and node-runtime.tar.xz (solid xz archives,
#              cached by content) and DIR/MANIFEST: what travels to the GPU machine
#   --stage-nvidia DIR   write DIR/bin/nvidia.tar.xz (nvidia-dp and nfd) and DIR/MANIFEST
#              (hack/node/stage-nvidia.sh: the call before `run.sh lab-nvidia`)
#   --stage-dra DIR      write DIR/bin/dra.tar.xz (dra) and DIR/MANIFEST
#              (hack/node/stage-dra.sh: the call before `run.sh lab-dra`)
# Output: ${GPULAB_CACHE:-~/.cache/gpu-lab}/node/<component>-<version>/bin, with a
# .complete marker holding the fingerprint of the sources and flags it was built from.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../../toolchain/versions.env
source "$root/toolchain/versions.env"
# shellcheck source=versions.env
source "$here/versions.env"
: "${KUBERNETES_VERSION:?}" "${ETCD_VERSION:?}" "${CONTAINERD_VERSION:?}" "${RUNC_VERSION:?}"
: "${NVIDIA_CONTAINER_TOOLKIT_VERSION:?}" "${CNI_PLUGINS_VERSION:?}" "${NVIDIA_DEVICE_PLUGIN_VERSION:?}" "${NFD_VERSION:?}"
: "${DRA_DRIVER_VERSION:?}" "${DRA_CHART_OFFLINE_VERSION:?}" "${DRA_GO_NVFM_VERSION:?}" "${DRA_KUBERNETES_VERSION:?}"
[[ $DRA_DRIVER_VERSION == "$DRA_CHART_OFFLINE_VERSION" ]] ||
  { echo "node/build.sh: DRA_DRIVER_VERSION $DRA_DRIVER_VERSION is not the chart's DRA_CHART_OFFLINE_VERSION $DRA_CHART_OFFLINE_VERSION" >&2; exit 1; }

cache_root=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}
cache=$cache_root/node
wrappers=$here/go
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"
log() { echo "[node-build] $*" >&2; }
die() { echo "node/build.sh: $*" >&2; exit 1; }
command -v go >/dev/null || die "'go' not found on PATH; install Go >= 1.26"

update=0 mod_only=0 stage= stage_nvidia= stage_dra= comps=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --update) update=1 ;;
    --mod-only) mod_only=1 ;;
    --stage) stage=${2:?--stage needs a directory}; shift ;;
    --stage-nvidia) stage_nvidia=${2:?--stage-nvidia needs a directory}; shift; comps+=(nvidia-dp nfd) ;;
    --stage-dra) stage_dra=${2:?--stage-dra needs a directory}; shift; comps+=(dra) ;;
    kube|containerd|shim|runc|toolkit|cni|deviceplugin|native|nvidia-dp|nfd|dra) comps+=("$1") ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (components: kube containerd shim runc toolkit cni deviceplugin native nvidia-dp nfd dra)" ;;
  esac
  shift
done
[[ ${#comps[@]} -gt 0 ]] || comps=(native deviceplugin cni runc toolkit shim containerd nvidia-dp nfd dra kube)

# pinned <dir> <module>: the version the committed go.mod requires.
pinned() { [[ -f $1/go.mod ]] && sed -n "s|^[[:space:]]*\(require \)\{0,1\}$2 \(v[^ ]*\).*|\2|p" "$1/go.mod" | head -1 || true; }

# The go.mod header and module paths keep the harness's old home (toolchain/node): the
# committed go.mod files' bytes are part of each build's fingerprint, so renaming them would
# rebuild every component (hours on 2 cores) for no change in what is built.
new_mod() { # new_mod <dir> <module path>
  (cd "$1" && rm -f go.mod go.sum && {
    echo "// Generated by toolchain/node/build.sh --update from the versions files; commit with go.sum."
    echo "module $2"
  } >go.mod && go mod edit -go=1.26.0)
}

generate() {
  local c=$1 d=$wrappers/$1
  log "$c: generating go.mod"
  case $c in
    kube)
      local v=v$KUBERNETES_VERSION staging=v0.${KUBERNETES_VERSION#1.} kmod
      kmod=$(cd "$d" && go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
      [[ -f $kmod ]] || die "no go.mod for k8s.io/kubernetes@$v: is the Go module proxy reachable?"
      new_mod "$d" gpulab.local/toolchain/node/kube
      # k8s.io/kubernetes replaces its staging modules with ./staging/src/...; a dependency's
      # replaces are ignored, so each is repeated here at its published v0.Y.Z.
      local args=() m
      for m in $(sed -n 's|^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*|\1|p' "$kmod"); do
        args+=("-replace=$m=$m@$staging")
      done
      [[ ${#args[@]} -gt 0 ]] || die "no staging replaces in $kmod"
      (cd "$d" && go mod edit "${args[@]}" "-require=k8s.io/kubernetes@$v")
      for m in $(sed -n 's/^godebug \([^(].*\)$/\1/p' "$kmod"); do (cd "$d" && go mod edit "-godebug=$m"); done
      ;;
    containerd)
      new_mod "$d" gpulab.local/toolchain/node/containerd
      (cd "$d" && go mod edit "-require=github.com/containerd/containerd/v2@v$CONTAINERD_VERSION")
      ;;
    shim)
      new_mod "$d" gpulab.local/toolchain/node/shim
      (cd "$d" && go get -tool "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v$CONTAINERD_VERSION")
      ;;
    runc)
      new_mod "$d" gpulab.local/toolchain/node/runc
      (cd "$d" && go get -tool "github.com/opencontainers/runc@v$RUNC_VERSION")
      ;;
    toolkit)
      new_mod "$d" gpulab.local/toolchain/node/toolkit
      (cd "$d" && go get -tool "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk@v$NVIDIA_CONTAINER_TOOLKIT_VERSION" \
        "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime@v$NVIDIA_CONTAINER_TOOLKIT_VERSION")
      ;;
    nvidia-dp)
      new_mod "$d" gpulab.local/toolchain/node/nvidia-dp
      local cmd tools=()
      for cmd in $NVIDIA_DP_CMDS; do tools+=("github.com/NVIDIA/k8s-device-plugin/cmd/$cmd@v$NVIDIA_DEVICE_PLUGIN_VERSION"); done
      (cd "$d" && go get -tool "${tools[@]}")
      ;;
    nfd)
      # node-feature-discovery pins its k8s.io modules (and gogo/protobuf) by replace, and its
      # api/nfd module to ./api/nfd; a dependency's replaces are ignored, so each is repeated
      # here (the local one at the same version, published from the same tag).
      local v=v$NFD_VERSION nmod from arrow to ver rest cmd args=() tools=()
      nmod=$(cd "$d" && go mod download -json "sigs.k8s.io/node-feature-discovery@$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
      [[ -f $nmod ]] || die "no go.mod for sigs.k8s.io/node-feature-discovery@$v: is the Go module proxy reachable?"
      new_mod "$d" gpulab.local/toolchain/node/nfd
      while read -r from arrow to ver rest; do
        case $to in
          ./*) args+=("-replace=$from=$from@$v") ;;
          *) args+=("-replace=$from=$to@$ver") ;;
        esac
      done < <(sed -n '/^replace (/,/^)/{/=>/p}' "$nmod")
      [[ ${#args[@]} -gt 0 ]] || die "no replaces in $nmod"
      for cmd in $NFD_CMDS; do tools+=("sigs.k8s.io/node-feature-discovery/cmd/$cmd@$v"); done
      (cd "$d" && go mod edit "${args[@]}" && go get -tool "${tools[@]}")
      ;;
    dra)
      # The gpu-kubelet-plugin, and nvidia-cdi-hook at the container toolkit's version that the
      # driver's go.mod requires: upstream's image copies the hook from that toolkit's image
      # (deployments/container/Dockerfile, hack/toolkit-container-image.sh).
      local v=v$DRA_DRIVER_VERSION dmod tk
      mkdir -p "$d"
      dmod=$(cd "$d" && go mod download -json "sigs.k8s.io/dra-driver-nvidia-gpu@$v" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
      [[ -f $dmod ]] || die "no go.mod for sigs.k8s.io/dra-driver-nvidia-gpu@$v: is the Go module proxy reachable?"
      tk=$(awk '$1 == "github.com/NVIDIA/nvidia-container-toolkit" {print $2; exit}' "$dmod")
      [[ -n $tk ]] || die "$dmod requires no github.com/NVIDIA/nvidia-container-toolkit"
      new_mod "$d" gpulab.local/toolchain/node/dra
      # What the proxy does not serve of the driver's requirements, replaced (versions.env).
      (cd "$d" && go mod edit "-replace=github.com/NVIDIA/go-nvfm=github.com/NVIDIA/go-nvfm@$DRA_GO_NVFM_VERSION" \
        "-replace=k8s.io/kubernetes=k8s.io/kubernetes@$DRA_KUBERNETES_VERSION")
      (cd "$d" && go get -tool "sigs.k8s.io/dra-driver-nvidia-gpu/cmd/gpu-kubelet-plugin@$v" \
        "github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook@$tk")
      ;;
    cni)
      new_mod "$d" gpulab.local/toolchain/node/cni
      local p tools=()
      for p in main/bridge ipam/host-local main/loopback; do
        tools+=("github.com/containernetworking/plugins/plugins/$p@v$CNI_PLUGINS_VERSION")
      done
      (cd "$d" && go get -tool "${tools[@]}")
      ;;
  esac
  (cd "$d" && go mod tidy)
}

ensure_wrapper() { # ensure_wrapper <component> <module> <version>
  local have
  have=$(pinned "$wrappers/$1" "$2")
  if [[ $update == 1 || $have != "$3" ]]; then
    [[ -z $have ]] || [[ $update == 1 ]] || log "$1: go.mod pins $2 $have, the versions files say $3: regenerating"
    generate "$1"
  fi
}

fingerprint() { # fingerprint <flags> <files...>
  local flags=$1; shift
  { printf '%s\n' "$flags" "$(go env GOVERSION)"; cat "$@"; } | sha256sum | cut -c1-16
}

# build <component> <version> <flags> <sources...> -- <function>: runs <function> <outdir> in
# a temporary directory, then moves it into place with the .complete marker.
build() {
  [[ $mod_only == 0 ]] || return 0
  local c=$1 ver=$2 flags=$3; shift 3
  local srcs=()
  while [[ $1 != -- ]]; do srcs+=("$1"); shift; done
  shift
  local out=$cache/$c-$ver fp
  fp=$(fingerprint "$flags" "${srcs[@]}")
  if [[ -f $out/.complete && $(cat "$out/.complete") == "$fp" ]]; then log "$c $ver: cached in $out"; return 0; fi
  log "$c $ver: building into $out"
  rm -rf "$out.partial"; mkdir -p "$out.partial/bin"
  local t0=$SECONDS
  "$@" "$out.partial/bin"
  echo "$fp" >"$out.partial/.complete"
  echo "$((SECONDS - t0))" >"$out.partial/.build-seconds"
  rm -rf "$out"; mv "$out.partial" "$out"
  log "$c $ver: built in $((SECONDS - t0)) s: $(cd "$out/bin" && du -b -- * | tr '\n\t' '; ')"
}

wrapper_srcs() { local f; for f in "$wrappers/$1"/go.mod "$wrappers/$1"/go.sum "$wrappers/$1"/*.go; do [[ -f $f ]] && echo "$f"; done; }
build_date=$(date -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH} +%Y-%m-%dT%H:%M:%SZ)

kube_build() {
  local v=v$KUBERNETES_VERSION minor=${KUBERNETES_VERSION#*.} ld="-s -w" pkg key
  minor=${minor%%.*}
  # The keys of kubernetes hack/lib/version.sh (kube::version::ldflags).
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    for key in "gitVersion=$v" "gitMajor=${KUBERNETES_VERSION%%.*}" "gitMinor=$minor" "gitTreeState=clean" "buildDate=$build_date"; do
      ld+=" -X $pkg.$key"
    done
  done
  (cd "$wrappers/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$1/gpulab-kube" .)
}
containerd_ld() { # the stamps of containerd's Makefile (GO_LDFLAGS)
  echo "-s -w -X github.com/containerd/containerd/v2/version.Version=v$CONTAINERD_VERSION -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd"
}
# Upstream's builtins without the snapshotters that need cgo or host tools, and no tracing.
CONTAINERD_TAGS="no_btrfs no_devmapper no_zfs no_tracing urfave_cli_no_docs"
containerd_build() {
  (cd "$wrappers/containerd" && CGO_ENABLED=0 go build -trimpath -tags "$CONTAINERD_TAGS" -ldflags "$(containerd_ld)" -o "$1/gpulab-containerd" .)
}
shim_build() {
  (cd "$wrappers/shim" && CGO_ENABLED=0 go build -trimpath -ldflags "$(containerd_ld)" -o "$1/containerd-shim-runc-v2" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
}
runc_build() {
  # As runc's Makefile `static` target: seccomp (containerd gives every pod sandbox the
  # runtime's default seccomp profile, which a runc without it refuses), linked statically
  # with libseccomp (Debian: libseccomp-dev); without libpathrs (a Rust library).
  [[ -f /usr/lib/x86_64-linux-gnu/libseccomp.a || -f /usr/lib/libseccomp.a ]] ||
    die "runc needs libseccomp's static library: apt-get install libseccomp-dev"
  (cd "$wrappers/runc" && CGO_ENABLED=1 go build -trimpath -tags "seccomp urfave_cli_no_docs netgo osusergo" \
    -ldflags "-s -w -extldflags -static" -o "$1/runc" github.com/opencontainers/runc)
}
toolkit_build() {
  # The toolkit's Makefile links with lazy binding: NVML's symbols resolve at first use.
  local cmd
  for cmd in nvidia-ctk nvidia-container-runtime; do
    (cd "$wrappers/toolkit" && CGO_ENABLED=1 go build -trimpath \
      -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy' -X github.com/NVIDIA/nvidia-container-toolkit/internal/info.version=$NVIDIA_CONTAINER_TOOLKIT_VERSION" \
      -o "$1/$cmd" "github.com/NVIDIA/nvidia-container-toolkit/cmd/$cmd")
  done
}
# NVIDIA's Makefile (cmd-%: BUILDFLAGS): NVML's symbols resolve when it is dlopen'ed.
NVIDIA_DP_CMDS="nvidia-device-plugin gpu-feature-discovery config-manager mps-control-daemon"
nvidia_dp_build() {
  local cmd info=github.com/NVIDIA/k8s-device-plugin/internal/info
  for cmd in $NVIDIA_DP_CMDS; do
    (cd "$wrappers/nvidia-dp" && CGO_ENABLED=1 go build -trimpath \
      -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files' -X $info.version=v$NVIDIA_DEVICE_PLUGIN_VERSION" \
      -o "$1/$cmd" "github.com/NVIDIA/k8s-device-plugin/cmd/$cmd")
  done
}
# NFD's Makefile (BUILD_FLAGS, static) with its image's HOSTMOUNT_PREFIX /host- (the chart
# mounts the host's /sys, /boot, /etc/os-release, /usr/lib, /lib at /host-*).
NFD_CMDS="nfd-master nfd-worker nfd-gc"
nfd_build() {
  local cmd pkg=sigs.k8s.io/node-feature-discovery/pkg
  for cmd in $NFD_CMDS; do
    (cd "$wrappers/nfd" && CGO_ENABLED=0 go build -trimpath -tags osusergo,netgo \
      -ldflags "-s -w -X $pkg/version.version=v$NFD_VERSION -X $pkg/utils/hostpath.pathPrefix=/host-" \
      -o "$1/$cmd" "sigs.k8s.io/node-feature-discovery/cmd/$cmd")
  done
}
# NVIDIA's DRA driver: its Makefile's cmd-% (cgo; CGO_LDFLAGS_ALLOW lets go-nvml's own
# `-Wl,--unresolved-symbols=ignore-in-object-files` through: NVML's symbols resolve when it is
# dlopen'ed; -X internal/info.version), and the toolkit's Makefile's for nvidia-cdi-hook.
DRA_BINARIES="gpu-kubelet-plugin nvidia-cdi-hook"
dra_build() {
  local tk
  tk=$(pinned "$wrappers/dra" github.com/NVIDIA/nvidia-container-toolkit)
  (cd "$wrappers/dra" && CGO_LDFLAGS_ALLOW='-Wl,--unresolved-symbols=ignore-in-object-files' CGO_ENABLED=1 \
    go build -trimpath -ldflags "-s -w -X sigs.k8s.io/dra-driver-nvidia-gpu/internal/info.version=v$DRA_DRIVER_VERSION" \
    -o "$1/gpu-kubelet-plugin" sigs.k8s.io/dra-driver-nvidia-gpu/cmd/gpu-kubelet-plugin)
  (cd "$wrappers/dra" && CGO_ENABLED=1 go build -trimpath \
    -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy' -X github.com/NVIDIA/nvidia-container-toolkit/internal/info.version=${tk#v}" \
    -o "$1/nvidia-cdi-hook" github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook)
}
cni_build() {
  local p ld="-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=v$CNI_PLUGINS_VERSION"
  for p in main/bridge ipam/host-local main/loopback; do
    (cd "$wrappers/cni" && CGO_ENABLED=0 go build -trimpath -ldflags "$ld" -o "$1/${p#*/}" "github.com/containernetworking/plugins/plugins/$p")
  done
}
deviceplugin_build() {
  (cd "$here/deviceplugin" && CGO_ENABLED=1 go build -trimpath \
    -ldflags "-s -w '-extldflags=-Wl,-z,lazy'" -o "$1/gpulab-device-plugin" .)
}
native_build() {
  cc -O2 -Wall -Wextra -s -o "$1/gpulab-vectoradd" "$here/cuda/vectoradd.c" -ldl
  cc -static -Os -Wall -Wextra -s -o "$1/gpulab-pause" "$here/pause/pause.c"
}

for c in "${comps[@]}"; do
  case $c in
    kube) ensure_wrapper kube k8s.io/kubernetes "v$KUBERNETES_VERSION"
      build kube "$KUBERNETES_VERSION" kube-ldflags $(wrapper_srcs kube) -- kube_build ;;
    containerd) ensure_wrapper containerd github.com/containerd/containerd/v2 "v$CONTAINERD_VERSION"
      build containerd "$CONTAINERD_VERSION" "$CONTAINERD_TAGS $(containerd_ld)" $(wrapper_srcs containerd) -- containerd_build ;;
    shim) ensure_wrapper shim github.com/containerd/containerd/v2 "v$CONTAINERD_VERSION"
      build shim "$CONTAINERD_VERSION" "$(containerd_ld)" $(wrapper_srcs shim) -- shim_build ;;
    runc) ensure_wrapper runc github.com/opencontainers/runc "v$RUNC_VERSION"
      build runc "$RUNC_VERSION" cgo-seccomp-static $(wrapper_srcs runc) -- runc_build ;;
    toolkit) ensure_wrapper toolkit github.com/NVIDIA/nvidia-container-toolkit "v$NVIDIA_CONTAINER_TOOLKIT_VERSION"
      build toolkit "$NVIDIA_CONTAINER_TOOLKIT_VERSION" "cgo-lazy nvidia-ctk nvidia-container-runtime" $(wrapper_srcs toolkit) -- toolkit_build ;;
    cni) ensure_wrapper cni github.com/containernetworking/plugins "v$CNI_PLUGINS_VERSION"
      build cni "$CNI_PLUGINS_VERSION" "" $(wrapper_srcs cni) -- cni_build ;;
    nvidia-dp) ensure_wrapper nvidia-dp github.com/NVIDIA/k8s-device-plugin "v$NVIDIA_DEVICE_PLUGIN_VERSION"
      build nvidia-dp "$NVIDIA_DEVICE_PLUGIN_VERSION" "cgo-dlopen $NVIDIA_DP_CMDS" $(wrapper_srcs nvidia-dp) -- nvidia_dp_build ;;
    nfd) ensure_wrapper nfd sigs.k8s.io/node-feature-discovery "v$NFD_VERSION"
      build nfd "$NFD_VERSION" "static hostmount=/host- $NFD_CMDS" $(wrapper_srcs nfd) -- nfd_build ;;
    dra) ensure_wrapper dra sigs.k8s.io/dra-driver-nvidia-gpu "v$DRA_DRIVER_VERSION"
      build dra "$DRA_DRIVER_VERSION" "cgo-dlopen $DRA_BINARIES" $(wrapper_srcs dra) -- dra_build ;;
    deviceplugin)
      build deviceplugin dev cgo-lazy "$here"/deviceplugin/go.mod "$here"/deviceplugin/go.sum "$here"/deviceplugin/*.go -- deviceplugin_build ;;
    native) build native dev "$(cc --version | head -1)" "$here"/cuda/vectoradd.c "$here"/pause/pause.c -- native_build ;;
  esac
done

[[ (-n $stage || -n $stage_nvidia || -n $stage_dra) && $mod_only == 0 ]] || exit 0

# What travels: two solid xz archives (binaries that share code compress together: 27 MB
# compressed one by one, 17 MB in one archive with a dictionary that spans them), cached by
# the content of what is in them, and a manifest of names, versions, sizes and sha256.
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo dev)
archive() { # archive <name> <dict> <binary:version>...
  local name=$1 dict=$2; shift 2
  local files=() spec f sum key tmp
  tmp=$(mktemp -d)
  for spec in "$@"; do
    f=${spec%%:*}
    [[ -x $f ]] || die "no $f: build it first (hack/node/build.sh)"
    cp "$f" "$tmp/"
    files+=("$(basename "$f")")
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(basename "$f")" "${spec##*:}" "$(stat -c %s "$f")" "$(sha256sum "$f" | cut -d' ' -f1)" >>"$manifest"
  done
  key=$(cd "$tmp" && sha256sum "${files[@]}" | sha256sum | cut -c1-16)
  if [[ ! -s $cache/xz/$name-$key.tar.xz ]]; then
    log "xz $name (${files[*]}; dictionary $dict)"
    (cd "$tmp" && tar --owner=0 --group=0 --mtime=@0 -cf - "${files[@]}" | xz -T1 "--lzma2=preset=9,dict=$dict") \
      >"$cache/xz/$name-$key.tar.xz.partial"
    mv "$cache/xz/$name-$key.tar.xz.partial" "$cache/xz/$name-$key.tar.xz"
  fi
  rm -rf "$tmp"
  cp "$cache/xz/$name-$key.tar.xz" "$stage/bin/$name.tar.xz"
}
# stage_stack <dir> <archive> <binary:version>...: one stack's archive and MANIFEST for a call
# of its own (stage-nvidia.sh, stage-dra.sh), then exit.
stage_stack() {
  stage=$1 manifest=$1/MANIFEST
  local name=$2; shift 2
  mkdir -p "$stage/bin" "$cache/xz"
  rm -f "$stage"/bin/*.xz
  printf 'archive\tbinary\tversion\tbytes\tsha256\n' >"$manifest"
  archive "$name" 192MiB "$@"
  log "staged in $stage/bin: $(du -b "$stage"/bin/*.tar.xz | awk '{s+=$1} END {print s}') bytes"
  column -t "$manifest" >&2
  exit 0
}
if [[ -n $stage_nvidia ]]; then
  specs=()
  for c in $NVIDIA_DP_CMDS; do specs+=("$cache/nvidia-dp-$NVIDIA_DEVICE_PLUGIN_VERSION/bin/$c:v$NVIDIA_DEVICE_PLUGIN_VERSION"); done
  for c in $NFD_CMDS; do specs+=("$cache/nfd-$NFD_VERSION/bin/$c:v$NFD_VERSION"); done
  stage_stack "$stage_nvidia" nvidia "${specs[@]}"
fi
if [[ -n $stage_dra ]]; then
  tk=$(pinned "$wrappers/dra" github.com/NVIDIA/nvidia-container-toolkit)
  stage_stack "$stage_dra" dra "$cache/dra-$DRA_DRIVER_VERSION/bin/gpu-kubelet-plugin:v$DRA_DRIVER_VERSION" \
    "$cache/dra-$DRA_DRIVER_VERSION/bin/nvidia-cdi-hook:$tk"
fi
etcd=$cache_root/sim/etcd-$ETCD_VERSION/bin/etcd
[[ -x $etcd ]] || die "no $etcd: build the simulated lab's toolchain first (make toolchain-tests)"
mkdir -p "$stage/bin" "$cache/xz"
rm -f "$stage"/bin/*.xz
manifest=$stage/MANIFEST
printf 'archive\tbinary\tversion\tbytes\tsha256\n' >"$manifest"
archive node-kube 192MiB "$etcd:v$ETCD_VERSION" "$cache/kube-$KUBERNETES_VERSION/bin/gpulab-kube:v$KUBERNETES_VERSION"
archive node-runtime 128MiB \
  "$cache/containerd-$CONTAINERD_VERSION/bin/gpulab-containerd:v$CONTAINERD_VERSION" \
  "$cache/shim-$CONTAINERD_VERSION/bin/containerd-shim-runc-v2:v$CONTAINERD_VERSION" \
  "$cache/deviceplugin-dev/bin/gpulab-device-plugin:$rev" \
  "$cache/runc-$RUNC_VERSION/bin/runc:v$RUNC_VERSION" \
  "$cache/toolkit-$NVIDIA_CONTAINER_TOOLKIT_VERSION/bin/nvidia-ctk:v$NVIDIA_CONTAINER_TOOLKIT_VERSION" \
  "$cache/toolkit-$NVIDIA_CONTAINER_TOOLKIT_VERSION/bin/nvidia-container-runtime:v$NVIDIA_CONTAINER_TOOLKIT_VERSION" \
  "$cache/cni-$CNI_PLUGINS_VERSION/bin/bridge:v$CNI_PLUGINS_VERSION" \
  "$cache/cni-$CNI_PLUGINS_VERSION/bin/host-local:v$CNI_PLUGINS_VERSION" \
  "$cache/cni-$CNI_PLUGINS_VERSION/bin/loopback:v$CNI_PLUGINS_VERSION" \
  "$cache/native-dev/bin/gpulab-pause:$rev" \
  "$cache/native-dev/bin/gpulab-vectoradd:$rev"
log "staged in $stage/bin: $(du -b "$stage"/bin/*.tar.xz | awk '{s+=$1} END {print s}') bytes"
column -t "$manifest" >&2
