"""The existing variant's kubeconfig: which file and context reach the cluster, read now
(its other settings: variants/existing/settings.py, whose ``resolve`` calls it)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Final

from gpulab.config.lab import NAMESPACE
from variants.existing.ctl import KubeconfigError, load_kubeconfig

#: A kubeconfig context name: EKS (arn:aws:eks:...:cluster/x), GKE (gke_p_z_x), kind-x, ...
KUBE_CONTEXT: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+=-]{0,252}$")
#: A file path without whitespace, quotes or shell metacharacters.
SAFE_PATH: Final = re.compile(r"^[A-Za-z0-9._/~+@=:-]{1,4096}$")


def resolve_kubeconfig(
    path_value: str, context: str, env: Mapping[str, str], problems: list[str]
) -> dict[str, str]:
    """The kubeconfig file and context an existing cluster is reached with, checked now.

    Returns ``{"kubeconfig_path": absolute path, "kube_context": name}`` (both empty when a
    problem was appended; ExistingSettings' fields): the path from ``kubeconfigPath``, else the first file of
    ``$KUBECONFIG``, else ``~/.kube/config``; the context given, else the file's current one.
    """
    ns = NAMESPACE
    origin = f"{ns}:kubeconfigPath"
    path = path_value
    if not path:
        first = (env.get("KUBECONFIG") or "").split(os.pathsep)[0]
        path, origin = (first, "$KUBECONFIG") if first else ("~/.kube/config", f"{ns}:kubeconfigPath default")
    if not SAFE_PATH.match(path):
        problems.append(
            f"{ns}:kubeconfigPath={path!r} (from {origin}) is not a plain path; allowed: letters, digits "
            f"and ._/~+@=:- (pattern {SAFE_PATH.pattern})"
        )
        return {"kubeconfig_path": "", "kube_context": ""}
    if context and not KUBE_CONTEXT.match(context):
        problems.append(
            f"{ns}:kubeContext={context!r} is not a context name (pattern {KUBE_CONTEXT.pattern})"
        )
        return {"kubeconfig_path": "", "kube_context": ""}
    full = os.path.abspath(os.path.expanduser(path))
    try:
        _, name = load_kubeconfig(full, context)
    except KubeconfigError as exc:
        key = "kubeContext" if exc.about == "context" else "kubeconfigPath"
        shown = context if key == "kubeContext" else path
        problems.append(f"{ns}:{key}={shown!r} (file {full}, from {origin}) cannot be used: {exc}")
        return {"kubeconfig_path": "", "kube_context": ""}
    if not KUBE_CONTEXT.match(name):
        problems.append(f"{ns}:kubeContext: the file's current-context {name!r} is not a safe context name")
    return {"kubeconfig_path": full, "kube_context": name}
