#!/usr/bin/env bash
# Installs gpu-lab's offline stand-in for the pulumi-command provider into the plugin cache
# of $PULUMI_HOME (default ~/.pulumi), as resource plugin `command` at the version of the
# installed PyPI SDK (pulumi_command/pulumi-plugin.json), so the engine finds it without
# downloading anything. Only for machines that cannot download the real provider.
#   usage: hack/offline/command/install.sh <pulumi-cli>
# The SDK is looked up on $GPULAB_PYTHON, else the checkout's .venv, else python3.
# Nothing is done when the same files are already installed under that version.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
log() { printf '[command-standin] %s\n' "$*" >&2; }

cli=${1:-}
if [[ -z "$cli" ]] || ! command -v "$cli" >/dev/null 2>&1; then
  log "usage: $0 <pulumi-cli>  (the pulumi binary that will use the plugin)"
  exit 2
fi
py=${GPULAB_PYTHON:-}
[[ -z "$py" && -x "$root/.venv/bin/python" ]] && py="$root/.venv/bin/python"
py=${py:-python3}

# The SDK's pulumi-plugin.json, found without importing the package.
version=$("$py" - <<'PY'
import importlib.util, json, pathlib, sys
spec = importlib.util.find_spec("pulumi_command")
if spec is None or not spec.submodule_search_locations:
    sys.exit("pulumi_command is not installed for " + sys.executable + ": run `make venv`")
meta = json.loads((pathlib.Path(list(spec.submodule_search_locations)[0]) / "pulumi-plugin.json").read_text())
print(meta["version"])
PY
)
implemented=$(sed -n 's/^IMPLEMENTED_VERSION = "\(.*\)"$/\1/p' "$here/command_logic.py")
if [[ "$version" != "$implemented" ]]; then
  log "warning: the SDK is pulumi-command $version but the stand-in implements $implemented's behaviour"
fi

export PULUMI_HOME=${PULUMI_HOME:-$HOME/.pulumi}
dest="$PULUMI_HOME/plugins/resource-command-v$version"
files=(pulumi-resource-command pulumi_resource_command.py command_logic.py command_exec.py)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in "${files[@]}"; do install -m 0644 "$here/$f" "$stage/$f"; done
# Shared with the language host (hack/offline/pulumi_protos.py): the generated gRPC modules only.
install -m 0644 "$here/../pulumi_protos.py" "$stage/pulumi_protos.py"
files+=(pulumi_protos.py)
chmod 0755 "$stage/pulumi-resource-command"
printf '%s\n' "$version" >"$stage/VERSION"

same=1
[[ -e "$dest.partial" || -e "$dest/.partial" ]] && same=0
for f in "${files[@]}" VERSION; do cmp -s "$stage/$f" "$dest/$f" || same=0; done
if ((same)); then
  log "resource-command-v$version already installed in $PULUMI_HOME/plugins"
  exit 0
fi
# --file DIR copies the directory's files into the cache entry; --reinstall replaces an
# existing entry of that version (without it an equal or newer one would be kept).
"$cli" plugin install resource command "v$version" --file "$stage" --reinstall >&2
for f in "${files[@]}" VERSION; do
  cmp -s "$stage/$f" "$dest/$f" || { log "install check failed: $dest/$f differs"; exit 1; }
done
log "installed the stand-in as resource-command-v$version in $PULUMI_HOME/plugins"
