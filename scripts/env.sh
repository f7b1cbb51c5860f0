# Sourced by the project's scripts and the Makefile: which Pulumi toolchain, which backend,
# which passphrase. The user's own setup wins everywhere:
#   * CLI: your `pulumi` on PATH when it is a v3 at or above PULUMI_CLI_FLOOR
#     (toolchain/versions.env), else the offline build in $GPULAB_CACHE (toolchain/decide.py);
#   * backend: PULUMI_BACKEND_URL, else the one `pulumi login` chose, else a local file
#     backend in .state/pulumi (the embedded default);
#   * PULUMI_HOME: never set here (the CLI's default, ~/.pulumi, or yours);
#   * passphrase (file backends only): PULUMI_CONFIG_PASSPHRASE(_FILE) if you set one, else
#     one generated once for this machine in ${XDG_CONFIG_HOME:-~/.config}/gpu-lab/passphrase
#     (mode 0600).
# The simulated lab's kubectl/helm/kwok come first on PATH only when GPULAB_STACK=sim.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GPULAB_ROOT="$root"
export GPULAB_CACHE="${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}"
export GPULAB_PYTHON="${GPULAB_PYTHON:-$root/.venv/bin/python}"
# The helpers below need only the standard library: the project's virtualenv runs them once
# `make venv` made it (a `python3` on PATH may be a version manager's shim, pyenv's forks a
# dozen shells per call), else python3.
_gpulab_py=python3
[[ -x "$root/.venv/bin/python" ]] && _gpulab_py="$root/.venv/bin/python"

if _gpulab_tc=$("$_gpulab_py" "$root/toolchain/decide.py" --stack "${GPULAB_STACK:-none}" --shell 2>&1); then
  eval "$_gpulab_tc"
  unset GPULAB_TOOLCHAIN_ERROR
else
  GPULAB_TOOLCHAIN_MODE=none
  GPULAB_TOOLCHAIN_ERROR=$_gpulab_tc
fi
unset _gpulab_tc
export GPULAB_TOOLCHAIN_MODE GPULAB_TOOLCHAIN_CLI GPULAB_TOOLCHAIN_CLI_VERSION GPULAB_TOOLCHAIN_REASON GPULAB_TOOLCHAIN_BUILD GPULAB_TOOLCHAIN_ERROR
_gpulab_path="$root/.venv/bin"
case $GPULAB_TOOLCHAIN_MODE in
  user) export GPULAB_PULUMI="$GPULAB_TOOLCHAIN_CLI" ;;
  offline)
    export GPULAB_PULUMI="$GPULAB_CACHE/bin/pulumi"
    _gpulab_path="$_gpulab_path:$GPULAB_CACHE/bin"
    # No network on an offline machine: no update check, and a missing plugin is an error
    # naming it (`make toolchain` installs them) instead of a download that hangs.
    export PULUMI_SKIP_UPDATE_CHECK=true
    export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
    export PULUMI_DISABLE_REGISTRY_RESOLVE=true
    ;;
  *) export GPULAB_PULUMI="" ;;
esac
# The simulated lab's stacks: sim, and its variants sim-<name> (e.g. sim-mig).
[[ "${GPULAB_STACK:-}" == sim || "${GPULAB_STACK:-}" == sim-* ]] && _gpulab_path="$GPULAB_CACHE/sim/bin:$_gpulab_path"
export PATH="$_gpulab_path:$PATH"
unset _gpulab_path

# The backend: yours (PULUMI_BACKEND_URL, or `pulumi login`'s current one), else local files.
# GPULAB_BACKEND_REASON says which of these it is (`make lab` prints it in its first lines).
_gpulab_creds="${PULUMI_HOME:-$HOME/.pulumi}/credentials.json"
if [[ -z "${PULUMI_BACKEND_URL:-}" ]]; then
  GPULAB_BACKEND=$("$_gpulab_py" - "$_gpulab_creds" <<'PY' 2>/dev/null || true
import json, sys
try:
    print(json.load(open(sys.argv[1])).get("current") or "")
except (OSError, ValueError):
    pass
PY
)
  if [[ -n "$GPULAB_BACKEND" ]]; then
    GPULAB_BACKEND_REASON="your current \`pulumi login\` ($_gpulab_creds)"
  elif [[ -n "${PULUMI_ACCESS_TOKEN:-}" ]]; then
    GPULAB_BACKEND_REASON="PULUMI_ACCESS_TOKEN is set and no \`pulumi login\` chose another: the Pulumi Cloud"
  else
    export PULUMI_BACKEND_URL="file://$root/.state/pulumi"
    GPULAB_BACKEND=$PULUMI_BACKEND_URL
    GPULAB_BACKEND_REASON="no PULUMI_BACKEND_URL and no \`pulumi login\`: the lab's own local file backend"
    mkdir -p "$root/.state/pulumi"
  fi
else
  GPULAB_BACKEND=$PULUMI_BACKEND_URL
  GPULAB_BACKEND_REASON="PULUMI_BACKEND_URL is set"
fi
unset _gpulab_creds
export GPULAB_BACKEND="${GPULAB_BACKEND:-https://api.pulumi.com}"
export GPULAB_BACKEND_REASON

# Passphrase secrets are used on self-managed (file, s3, gs, azblob) backends only.
case $GPULAB_BACKEND in
  http://* | https://*) ;;
  *)
    if [[ -z "${PULUMI_CONFIG_PASSPHRASE+x}" && -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]]; then
      _gpulab_pp="${XDG_CONFIG_HOME:-$HOME/.config}/gpu-lab/passphrase"
      if [[ ! -s "$_gpulab_pp" ]]; then
        (umask 077 && mkdir -p "$(dirname "$_gpulab_pp")" &&
          python3 -c 'import secrets; print(secrets.token_urlsafe(32))' >"$_gpulab_pp.tmp" &&
          mv "$_gpulab_pp.tmp" "$_gpulab_pp")
      fi
      chmod 0600 "$_gpulab_pp"
      export PULUMI_CONFIG_PASSPHRASE_FILE="$_gpulab_pp"
      unset _gpulab_pp
    fi
    ;;
esac
unset _gpulab_py
