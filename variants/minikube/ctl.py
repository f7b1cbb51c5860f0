"""minikube lifecycle for the lab, check-then-act, scoped to one named profile.

Run by the MinikubeCluster component as ``python3 -m variants.minikube.ctl up|down|addon``.
Every command names ``-p <profile>``; nothing here touches the user's default profile or
``~/.kube/config`` context beyond the one minikube itself writes for the profile.

``up`` starts the profile only when it is not already running (a re-run is safe), then
prints one JSON object: ``{"kubeconfig": <flattened, self-contained kubeconfig>,
"kubernetesVersion": "v1.x.y", "profile": ...}``. ``down`` deletes the profile and
succeeds when it is already gone (printing ``{"profile", "deleted"}``). ``addon`` enables
or disables minikube's own ``nvidia-device-plugin`` addon, which ``--gpus=all`` turns on:
with the GPU Operator owning the device plugin, two plugins would both register
``nvidia.com/gpu``.

Facts from kubernetes/minikube (FIELD-NOTES.md): GPUs need the docker driver and docker
runtime, minikube >= v1.37.0 (variants/minikube/releases.py: the first with cri-dockerd
v0.4.0, which runs the operator's ``runtimeClassName: nvidia`` Pods); ``--gpus`` accepts all,
nvidia, nvidia.com, amd.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from gpulab import diagnose
from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from variants.base import Action, clear_started, ctl_main, record_started
from variants.minikube import reuse
from variants.minikube.diagnose import diagnose_minikube_start

ADDON = "nvidia-device-plugin"


@dataclass(frozen=True)
class StartSpec:
    """What ``minikube start`` is asked for. ``memory_mib`` in MiB."""

    profile: str
    cpus: int
    memory_mib: int
    kubernetes_version: str
    gpus: str = "all"


def start_argv(spec: StartSpec) -> list[str]:
    """The ``minikube start`` argv for ``spec`` (no shell; values were validated by config)."""
    return [
        "minikube",
        "start",
        "-p",
        spec.profile,
        "--driver=docker",
        "--container-runtime=docker",
        f"--gpus={spec.gpus}",
        f"--cpus={spec.cpus}",
        f"--memory={spec.memory_mib}mb",
        f"--kubernetes-version={spec.kubernetes_version}",
    ]


def status_argv(profile: str) -> list[str]:
    """``minikube status`` of the profile, as JSON."""
    return ["minikube", "status", "-p", profile, "-o", "json"]


def delete_argv(profile: str) -> list[str]:
    """``minikube delete`` of the profile (never another one)."""
    return ["minikube", "delete", "-p", profile]


def addon_argv(profile: str, enabled: bool) -> list[str]:
    """Enable or disable minikube's device-plugin addon in the profile."""
    return ["minikube", "addons", "enable" if enabled else "disable", ADDON, "-p", profile]


def kubeconfig_argv(profile: str) -> list[str]:
    """Flattened, minified kubeconfig of the profile's context (certificates inline)."""
    return ["kubectl", "config", "view", "--flatten", "--minify", "--context", profile]


def is_running(status_json: str) -> bool:
    """True when ``minikube status -o json`` says host, kubelet and apiserver are Running.

    minikube prints one object for a single node, a list for several; an unknown
    profile prints non-JSON and exits non-zero (the caller treats that as not running).
    """
    try:
        doc = json.loads(status_json)
    except ValueError:
        return False
    nodes = doc if isinstance(doc, list) else [doc]
    return bool(nodes) and all(
        n.get("Host") == "Running" and n.get("Kubelet") == "Running" and n.get("APIServer") == "Running"
        for n in nodes
        if isinstance(n, dict)
    )


class StartError(GpuLabError, RuntimeError):
    """``minikube start`` failed; the message is its output and the diagnosis (cause, fix)."""


def _start(spec: StartSpec) -> None:
    """``minikube start`` for ``spec``; a failure is diagnosed (``minikube-start-failed``).

    Raises:
        StartError: it failed (the message carries minikube's output and the diagnosis).
    """
    try:
        cmd.check(start_argv(spec))
    except cmd.ProgramNotFoundError:
        raise
    except cmd.CommandError as exc:
        found = diagnose_minikube_start(exc.output, profile=spec.profile)
        raise StartError(f"{exc}\n\n{diagnose.render([found])}") from exc


class ReusedProfileError(GpuLabError, RuntimeError):
    """The profile exists but was not made the way the lab needs; the message lists each
    failed check (:mod:`variants.minikube.reuse`) with its fix."""


def check_reused(spec: StartSpec) -> None:
    """When the profile exists, check it before anything waits on it (:mod:`variants.minikube.reuse`).

    Raises:
        ReusedProfileError: a failed check (no GPU device request, another Kubernetes
            version, fewer CPUs or less memory), each with ``minikube delete -p P && make lab``.
    """

    config = reuse.profile_config(cmd.run(["minikube", "profile", "list", "-o", "json"]).stdout, spec.profile)
    if config is None:
        return
    inspected = cmd.run(reuse.inspect_argv(spec.profile))
    found = reuse.reuse_findings(
        spec.profile,
        spec.cpus,
        spec.memory_mib,
        spec.kubernetes_version,
        inspected.stdout if inspected.ok else None,
        config,
    )
    failed = [f for f in found if not f.ok]
    if failed:
        raise ReusedProfileError("\n".join(f"- {f.check}: {f.message}\n  fix: {f.fix}" for f in failed))
    print(f"minikube profile {spec.profile} exists and fits the lab: reusing it", file=sys.stderr)


def up(spec: StartSpec) -> dict[str, str]:
    """Start the profile if needed; return kubeconfig and server version (see module doc).

    A profile that exists is checked first (:func:`check_reused`)."""
    check_reused(spec)
    st = cmd.run(status_argv(spec.profile))
    if is_running(st.stdout):
        print(f"minikube profile {spec.profile} already running; not starting", file=sys.stderr)
    else:
        print("$ " + " ".join(start_argv(spec)), file=sys.stderr)
        if not profile_exists(spec.profile):
            # The lab's record of what it started: make destroy removes it even when this
            # create never reaches the stack's state (an interrupted run).
            record_started("minikube", spec.profile)
        _start(spec)
    kubeconfig = cmd.check(kubeconfig_argv(spec.profile)).stdout
    ver = cmd.check(["kubectl", "--context", spec.profile, "version", "-o", "json"]).stdout
    server = json.loads(ver).get("serverVersion", {}).get("gitVersion", "")
    return {"kubeconfig": kubeconfig, "kubernetesVersion": server, "profile": spec.profile}


def addon(profile: str, state: str) -> dict[str, str]:
    """Set minikube's device-plugin addon of ``profile`` to ``state`` (``enabled``/``disabled``)."""
    cmd.check(addon_argv(profile, state == "enabled"))
    return {"addon": ADDON, "state": state}


def down(profile: str) -> dict[str, object]:
    """Delete the profile; a profile that no longer exists is success. Returns
    ``{"profile", "deleted"}`` (``deleted`` False when it was already gone)."""
    listing = cmd.run(["minikube", "profile", "list", "-o", "json"])
    try:
        valid = json.loads(listing.stdout).get("valid") or []
        invalid = json.loads(listing.stdout).get("invalid") or []
        names = {p.get("Name") for p in valid + invalid}
    except (ValueError, AttributeError):
        names = {profile}  # cannot tell: let minikube decide
    if profile not in names:
        print(f"minikube profile {profile} is already gone", file=sys.stderr)
        clear_started("minikube", profile)
        return {"profile": profile, "deleted": False}
    cmd.check(delete_argv(profile))
    clear_started("minikube", profile)
    return {"profile": profile, "deleted": True}


def profile_exists(profile: str) -> bool:
    """True when ``minikube profile list`` names ``profile`` (valid or not)."""
    listing = cmd.run(["minikube", "profile", "list", "-o", "json"])
    try:
        doc = json.loads(listing.stdout)
    except ValueError:
        return False
    return profile in {p.get("Name") for p in (doc.get("valid") or []) + (doc.get("invalid") or [])}


def main(argv: list[str] | None = None) -> int:
    """CLI entry point; prints one JSON object; exit 0 ok, 1 failure (cause and fix), 2 usage."""
    ap = argparse.ArgumentParser(prog="python3 -m variants.minikube.ctl")
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--profile", required=True)
    u.add_argument("--cpus", type=int, required=True)
    u.add_argument("--memory-mib", type=int, required=True)
    u.add_argument("--kubernetes-version", required=True)
    u.add_argument("--gpus", default="all")
    d = sub.add_parser("down")
    d.add_argument("--profile", required=True)
    a = sub.add_parser("addon")
    a.add_argument("--profile", required=True)
    a.add_argument("--state", choices=("enabled", "disabled"), required=True)
    args = ap.parse_args(argv)
    actions: dict[str, Action] = {
        "up": lambda: (
            up(StartSpec(args.profile, args.cpus, args.memory_mib, args.kubernetes_version, args.gpus)),
            0,
        ),
        "down": lambda: (down(args.profile), 0),
        "addon": lambda: (addon(args.profile, args.state), 0),
    }
    return ctl_main("minikube_ctl", actions[args.cmd])


if __name__ == "__main__":
    sys.exit(main())
