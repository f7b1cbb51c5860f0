#!/usr/bin/env bash
# Prints the shell lines that put the simulated cluster's binaries on PATH:
#   eval "$(toolchain/sim/env.sh)"
# The bin dir is the one toolchain/sim/build.sh assembles:
#   ${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}/sim/bin
# (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwok, kwokctl, helm).
# With --bin-dir it prints only the directory.
set -euo pipefail

bindir=${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}/sim/bin
missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl; do
  [[ -x $bindir/$b ]] || missing+=("$b")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "env.sh: missing in $bindir: ${missing[*]}; run \`make toolchain\` (or toolchain/sim/build.sh)" >&2
  exit 1
fi
if [[ ${1:-} == --bin-dir ]]; then
  echo "$bindir"
else
  printf 'export GPULAB_SIM_BIN_DIR=%q\n' "$bindir"
  printf 'export PATH=%q:"$PATH"\n' "$bindir"
fi
