"""``make destroy`` finishes: whatever the last run left, and whichever state the cluster is in.

``pulumi destroy`` alone stops short in three ways: a stale lock or a pending operation from a
killed run blocks it; the Kubernetes provider cannot delete a ``helm.sh/v3`` Release in a
cluster that does not answer (``deleteUnreachable`` drops most objects, not a Release:
pulumi-kubernetes#2675, open), and with etcd frozen it waits on namespace finalizers for its
full timeout; and a cluster whose create was interrupted never entered the state, so destroy
leaves it running. ``make destroy`` therefore runs, around ``pulumi destroy``:

``python -m ops.teardown --stack S [--forget]`` (before):

1. what blocks a destroy (ops.repair, ``for_destroy``): a lock whose process is gone
   (``pulumi cancel --yes``), processes the killed engine left, pending operations (``stack
   export`` / ``stack import``); each is printed as it runs. A lock held by a running
   engine stops it (wait for that run).
2. the stack's cluster: asked with the kubeconfig in the state (the stack's outputs, else the
   Kubernetes provider's input: a first run interrupted after its cluster answered has no
   outputs), with bounded requests (gpulab.kube.client.REQUEST_TIMEOUT), and compared with the
   identity recorded at create (gpulab.kube.identity):

   * it answers and is the recorded cluster: nothing to do;
   * it does not answer at the recorded address but the variant finds it at another
     (ops.endpoint): as below, the message naming both addresses and the fix;
   * it does not answer (down, stopped, etcd frozen) and the lab owns it: the stack's
     Kubernetes resources are removed from the state (``stack import``), with what the
     variant can tell (``Variant.status``) and the count printed;
     ``pulumi destroy`` then runs the cluster's own delete command, which removes it whole;
   * the lab does not own it (``existing``), or the kubeconfig reaches **another** cluster:
     nothing is touched, the message names the cause (both clusters), and ``--forget``
     (``make destroy FORGET=1``) removes the Kubernetes resources from the state without
     touching any cluster.

``python -m ops.teardown --stack S --after`` (after a destroy that succeeded, and when there
is no stack at all): the variant's own record of what it started (``Variant.delete``: the
sim cluster's directory) is removed with the variant's delete command, and it says so; and
the private temporary directories of runs that are gone (``.state/tmp``, where the Kubernetes
provider writes its kubeconfig files: scripts/pulumi) are removed.

Exit codes: 0 ready for (or done with) destroy, 1 refused (the message names the cause and
the first fix), 2 usage.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import run as cmd
from gpulab.core import yamlio
from gpulab.core.errors import GpuLabError, os_error_fix
from gpulab.host import node_runtime
from gpulab.kube import identity
from gpulab.kube.client import load_clients, ping
from ops import endpoint, repair, stackstate
from variants import registry
from variants.base import Status

#: Resource types the prune removes: Kubernetes objects, not the provider itself.
K8S_PREFIX: Final = "kubernetes:"
#: What the cluster answered: its own, another cluster, or nothing.
ANSWERS, ANOTHER, SILENT = "answers", "another", "silent"


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
    ask: Callable[[], tuple[str, str]],
    gone: Callable[[], tuple[bool | None, str]],
    forget: bool = False,
    stack: str = "<stack>",
) -> tuple[dict[str, Any] | None, list[str], str]:
    """Decide the clean-up: (new deployment or None, removed URNs, what to print).

    ``ask()`` says what the cluster answered: ``(ANSWERS | ANOTHER | SILENT, detail)``;
    ``gone()`` is the variant's ``(gone?, evidence)``.

    Raises:
        TeardownError: another cluster answers, or a cluster the lab does not own does not
            answer, without ``forget``; nothing is removed then.
    """
    k8s = [r for r in deployment.get("resources") or [] if str(r.get("type", "")).startswith(K8S_PREFIX)]
    if not k8s:
        return None, [], "no Kubernetes resources in the state"
    variant = registry.get(kind)
    verdict, detail = ask()
    if verdict == ANSWERS:
        return None, [], "the API server answers"
    forget_fix = f"`GPULAB_STACK={stack} make destroy FORGET=1`"
    if verdict == ANOTHER and not forget:
        raise TeardownError(
            f"the {kind} stack's kubeconfig reaches another cluster than the one it recorded, so "
            f"nothing was deleted there: {detail}\n  fix: remove the stack's records without "
            f"touching either cluster with {forget_fix}; what the lab put in the recorded cluster "
            "(the gpu-operator release) stays there"
        )
    if verdict == SILENT and not variant.spec.owns_cluster and not forget:
        raise TeardownError(
            f"the {kind} cluster does not answer ({detail}); the lab does not own it, so it cannot "
            f"remove the gpu-operator release from it now.\n  fix: make the cluster answer and run "
            f"`GPULAB_STACK={stack} make destroy` again, or drop the release from the state (it stays "
            f"in the cluster) with {forget_fix}"
        )
    new, removed = prune_kubernetes(deployment)
    if verdict == ANOTHER:
        return new, removed, f"forgetting the recorded cluster ({detail})"
    if forget and not variant.spec.owns_cluster:
        return new, removed, f"forgetting the {kind} cluster that does not answer ({detail})"
    is_gone, evidence = gone()
    state = "is gone" if is_gone else "does not answer"
    return new, removed, f"the {kind} cluster {profile!r} {state} ({evidence}; {detail})"


def _gone(status: Status) -> tuple[bool | None, str]:
    """``(gone?, evidence)`` of the variant's status (:func:`plan`'s ``gone``)."""
    return status.gone, status.evidence


def ask_cluster(deployment: Mapping[str, Any], kubeconfig: str | None) -> tuple[str, str]:
    """What the stack's cluster answers (see :func:`plan`), within bounded requests."""
    if not kubeconfig:
        return SILENT, "the state holds no kubeconfig"
    try:
        api = load_clients(kubeconfig)
        ping(api, timeout=5)
        recorded = stackstate.identity_of(deployment)
        if recorded:
            identity.verify(identity.Identity.from_json(recorded), identity.read(kubeconfig, api), "")
    except identity.IdentityMismatchError as exc:
        return ANOTHER, f"recorded {exc.recorded.describe()}, now {exc.live.describe()}"
    except Exception as exc:  # unreachable, unparsable, not ready: "does not answer", with why
        return SILENT, str(exc).splitlines()[0][:300]
    return ANSWERS, ""


def _profile_of(stack: repair.Stack, root: Path) -> tuple[str, str]:
    """(variant, profile) from the stack's config, else from its stack file or template."""
    config = stack.config()
    if config:
        return repair.config_value(config, "cluster"), repair.config_value(config, "profile")
    for f in (root / "stacks" / f"Pulumi.{stack.name}.yaml", root / "stacks" / f"{stack.name}.yaml"):
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError):
            doc = (yamlio.load(f.read_text(encoding="utf-8")) or {}).get("config") or {}
            cfg = {k: {"value": v} for k, v in doc.items()}
            return repair.config_value(cfg, "cluster"), repair.config_value(cfg, "profile")
    return repair.config_value({}, "cluster"), repair.config_value({}, "profile")


def _say(text: str) -> None:
    print(f"gpu-lab: {text}", file=sys.stderr, flush=True)


def before(stack: repair.Stack, root: Path, forget: bool) -> int:
    """Step 1 and 2 of the module docstring; the exit code."""
    steps, blockers = repair.plan(stack, for_destroy=True)
    for b in blockers:
        _say(b)
    if any("another run holds" in b for b in blockers):
        return 1
    for step in steps:
        _say(f"before destroying: {step.what}")
        _say(step.run())
    exported = stack.export(secrets=True)
    deployment = exported.get("deployment") or {}
    kind, profile = _profile_of(stack, root)
    config = stack.config()

    def ask() -> tuple[str, str]:
        verdict, detail = ask_cluster(deployment, stackstate.kubeconfig_of(deployment))
        if verdict == SILENT:  # silent where recorded; the variant may know where it answers now
            change = endpoint.moved(
                registry.get(kind),
                profile,
                root,
                lambda key: repair.config_value(config, key),
                stackstate.identity_of(deployment),
                stack.name,
            )
            if change is not None:
                detail = f"{detail}; it answers at {change.live.server} instead: {change}"
        return verdict, detail

    new, removed, why = plan(
        kind,
        profile,
        deployment,
        ask,
        lambda: _gone(registry.get(kind).status(profile, root)),
        forget=forget,
        stack=stack.name,
    )
    if new is None:
        return 0
    # Imported without secrets in plaintext: the ciphertexts as exported, unchanged.
    plain = stack.export()
    pruned, _ = prune_kubernetes(plain.get("deployment") or {})
    plain["deployment"] = pruned
    stack.import_deployment(plain)
    _say(
        f"{why}: removed its {len(removed)} unreachable Kubernetes resource(s) from the "
        f"{stack.name} stack's state ({stackstate.names(removed)}); destroying the rest"
    )
    return 0


def after(stack: repair.Stack, root: Path) -> int:
    """The variant's own leftovers and the engine's temporary files (module docstring)."""
    kind, profile = _profile_of(stack, root)
    code = 0
    left = registry.get(kind).delete(profile, root)
    if left is not None:
        argv, what = left
        argv = [sys.executable if argv[0] == "python" else argv[0], *argv[1:]]
        _say(f"{what} was started by the lab but is not in the {stack.name} stack's state; removing it")
        try:
            proc = cmd.run(argv, cwd=root, timeout=300)
        except (cmd.ProgramNotFoundError, cmd.CommandTimeoutError) as exc:
            proc = cmd.Result(1, "", str(exc))
        if proc.returncode != 0:
            _say(f"removing {what} failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}")
            code = 1
        else:
            _say(f"removed {what}")
    sweep_tmp(root)
    _runtime_as_found(stack.name, root)
    return code


def _runtime_as_found(stack: str, root: Path) -> None:
    """Say whether this host's container runtime configuration is as the lab found it at ``up``
    (the ``nodeRuntime`` output kept in ``.state/outputs-<stack>.json``; gpulab.host.node_runtime).
    Only where it was read on this host (not a capture): a changed file is named with both
    hashes and the fix; silent where nothing was recorded."""
    saved = root / ".state" / f"outputs-{stack}.json"
    try:
        recorded = json.loads(saved.read_text()).get("nodeRuntime")
    except (OSError, ValueError, AttributeError):
        return
    if not isinstance(recorded, dict) or recorded.get("simulated") or recorded.get("root") != "/":
        return
    now = node_runtime.read_node_runtime(Path("/"), cmd.probe, driver_version=None, nvml_bus_ids=[])
    changes = node_runtime.runtime_changes(recorded, now)
    if not changes:
        _say("the container runtime configuration is as the lab found it at make lab")
        return
    for line in changes:
        _say(
            f"{line}; the lab does not write it: the GPU Operator's toolkit (toolkit.enabled) or "
            "another tool did. fix: compare it with your copy and restore it, then restart the runtime"
        )


def sweep_tmp(root: Path) -> list[Path]:
    """Remove the private temporary directories (``.state/tmp/<kind>.<pid>.<suffix>``: the
    engine's, scripts/pulumi, and scripts/lab's) whose process is gone; returns them."""
    removed = []
    tmp = root / ".state" / "tmp"
    for d in sorted(tmp.iterdir()) if tmp.is_dir() else []:
        parts = d.name.split(".")
        pid = parts[1] if len(parts) >= 3 and parts[1].isdigit() else None
        if pid is not None and Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def main(argv: list[str] | None = None) -> int:
    """CLI used by ``make destroy`` (see module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m ops.teardown")
    ap.add_argument("--stack", required=True)
    ap.add_argument("--forget", action="store_true", help="drop unreachable objects, touching no cluster")
    ap.add_argument("--after", action="store_true", help="after destroy: the variant's own leftovers")
    args = ap.parse_args(argv)
    root = Path(os.environ.get("GPULAB_ROOT") or Path.cwd())
    stack = repair.Stack(args.stack, root)
    try:
        return after(stack, root) if args.after else before(stack, root, args.forget)
    except GpuLabError as exc:  # TeardownError, or a pulumi command that failed
        _say(str(exc))
        return 1
    except OSError as exc:
        _say(f"{exc}\n  fix: {os_error_fix(exc)}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
