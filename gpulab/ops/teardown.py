"""Destroy a lab whose cluster was deleted by hand, on the stock Kubernetes provider.

``pulumi destroy`` of a lab whose cluster is gone would fail on the Kubernetes resources:
the provider's ``deleteUnreachable`` drops most of them, but not a ``helm.sh/v3`` Release
(pulumi-kubernetes#2675, open). Before ``make destroy`` this module:

1. reads the stack's state (``pulumi stack export``); no Kubernetes resources: nothing to do;
2. asks the API server (the stack's ``kubeconfig`` output); it answers: nothing to do;
3. asks the variant whether the cluster it owns is really gone (``Variant.gone``: minikube
   profile absent, kind cluster absent, k3s uninstalled, the sim cluster's directory gone). Gone: the
   stack's Kubernetes resources are removed from the state (``pulumi stack import``) and
   the count is printed; the destroy then runs the cluster's own delete commands. Present
   but not answering (stopped, or briefly unreachable), or cannot tell: nothing is dropped,
   and the message says how to start or delete it first.

A cluster the lab does not own (``existing``) is never pruned.

``python -m gpulab.ops.teardown --stack S`` exit codes: 0 ready for destroy, 1 refused (the
message names the cause and the first fix), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpulab.config.lab import NAMESPACE, SCHEMA
from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.kube.client import load_clients, ping
from variants import registry

#: Resource types the prune removes: Kubernetes objects, not the provider itself.
K8S_PREFIX = "kubernetes:"


class TeardownError(GpuLabError, RuntimeError):
    """The clean-up was refused; the message names the cause and the first fix."""


def prune_kubernetes(deployment: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The deployment without its Kubernetes resources, and the URNs removed.

    ``deployment`` is ``pulumi stack export``'s ``deployment`` object. References to a
    removed URN in other resources' ``dependencies``, ``propertyDependencies`` and
    ``deletedWith`` are dropped too, so ``pulumi stack import`` accepts the result.
    Pending operations on removed resources are dropped.
    """
    resources = list(deployment.get("resources") or [])
    removed = [r["urn"] for r in resources if str(r.get("type", "")).startswith(K8S_PREFIX)]
    gone = set(removed)
    kept: list[dict[str, Any]] = []
    for r in resources:
        if r["urn"] in gone:
            continue
        r = dict(r)
        if r.get("dependencies"):
            r["dependencies"] = [d for d in r["dependencies"] if d not in gone]
        if r.get("propertyDependencies"):
            r["propertyDependencies"] = {
                k: [d for d in v if d not in gone] for k, v in r["propertyDependencies"].items()
            }
        if r.get("deletedWith") in gone:
            r.pop("deletedWith")
        kept.append(r)
    out = dict(deployment)
    out["resources"] = kept
    if out.get("pending_operations"):
        out["pending_operations"] = [
            op for op in out["pending_operations"] if op.get("resource", {}).get("urn") not in gone
        ]
    return out, removed


def plan(
    kind: str,
    profile: str,
    deployment: Mapping[str, Any],
    answers: Callable[[], bool],
    gone: Callable[[], tuple[bool | None, str]],
) -> tuple[dict[str, Any] | None, list[str], str]:
    """Decide the clean-up: (new deployment or None, removed URNs, what to print).

    Raises:
        TeardownError: the cluster exists but does not answer, or whether it is gone
            cannot be told; nothing is to be removed then.
    """
    k8s = [r for r in deployment.get("resources") or [] if str(r.get("type", "")).startswith(K8S_PREFIX)]
    if not k8s:
        return None, [], "no Kubernetes resources in the state"
    if not registry.get(kind).owns_cluster:
        return None, [], f"a cluster the lab does not own ({kind}) is never pruned"
    if answers():
        return None, [], "the API server answers"
    is_gone, evidence = gone()
    hint = registry.get(kind).start_or_delete_hint(profile)
    if is_gone is None:
        raise TeardownError(
            f"the {kind} cluster {profile!r} does not answer and whether it still exists cannot be "
            f"told ({evidence}); nothing was removed from the state: {hint}, "
            "then run `make destroy` again"
        )
    if not is_gone:
        raise TeardownError(
            f"the {kind} cluster {profile!r} exists ({evidence}) but its API server does not answer "
            f"(stopped?); nothing was removed from the state: {hint}, "
            "then run `make destroy` again"
        )
    new, removed = prune_kubernetes(deployment)
    return new, removed, f"the {kind} cluster {profile!r} is gone ({evidence})"


def _config_value(config: Mapping[str, Any], key: str) -> str:
    entry = config.get(f"{NAMESPACE}:{key}")
    if isinstance(entry, dict) and "value" in entry:
        return str(entry["value"])
    return str(SCHEMA[key][1])


def main(argv: list[str] | None = None) -> int:
    """CLI used by ``make destroy`` (see module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.ops.teardown")
    ap.add_argument("--stack", required=True)
    args = ap.parse_args(argv)
    cli = os.environ.get("GPULAB_PULUMI") or "pulumi"
    root = Path(os.environ.get("GPULAB_ROOT") or Path.cwd())

    def pulumi(*a: str) -> str:
        return cmd.check([cli, *a, "--stack", args.stack], cwd=root).stdout

    try:
        exported = json.loads(pulumi("stack", "export"))
        config = json.loads(pulumi("config", "--json") or "{}")
        kind, profile = _config_value(config, "cluster"), _config_value(config, "profile")

        def answers() -> bool:
            try:
                kc = json.loads(pulumi("stack", "output", "--json", "--show-secrets")).get("kubeconfig")
                if not kc:
                    return False
                ping(load_clients(kc), timeout=5)
                return True
            except Exception:  # unreachable, unparsable, no outputs: all "does not answer"
                return False

        new, removed, why = plan(
            kind,
            profile,
            exported.get("deployment") or {},
            answers,
            lambda: registry.get(kind).gone(profile, root),
        )
        if new is None:
            return 0
        exported["deployment"] = new
        (root / ".state").mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=root / ".state", delete=False) as f:
            json.dump(exported, f)
        try:
            pulumi("stack", "import", "--file", f.name)
        finally:
            os.unlink(f.name)
    except GpuLabError as exc:  # TeardownError, or a pulumi command that failed
        print(f"gpu-lab: {exc}", file=sys.stderr)
        return 1
    names = ", ".join(u.rsplit("::", 1)[-1] for u in removed)
    print(
        f"gpu-lab: {why}: removed its {len(removed)} unreachable Kubernetes resource(s) from the "
        f"{args.stack} stack's state ({names}); destroying the rest",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
