# Sourced by the project's scripts and the Makefile: where the toolchain and state live.
# Everything is overridable from the environment.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GPULAB_ROOT="$root"
export GPULAB_CACHE="${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}"
export PATH="$root/.venv/bin:$GPULAB_CACHE/bin:$GPULAB_CACHE/sim/bin:$PATH"
export GPULAB_PYTHON="${GPULAB_PYTHON:-$root/.venv/bin/python}"
# Local, offline engine: state in the project, no update check, no plugin downloads.
export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-file://$root/.state/pulumi}"
export PULUMI_HOME="${PULUMI_HOME:-$GPULAB_CACHE/pulumi-home}"
# Secrets in this lab are kubeconfigs of throwaway local clusters; the default
# passphrase is documented in README.md. Set your own for anything that matters.
export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE-gpu-lab}"
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_DISABLE_REGISTRY_RESOLVE=true
mkdir -p "$root/.state/pulumi"
