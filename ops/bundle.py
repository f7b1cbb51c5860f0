"""``make debug-bundle``: one archive with what someone needs to debug the lab, and no secret.

``python -m ops.bundle [--stack S] [--out-dir DIR] [--log-lines N]`` writes
``DIR/debug-bundle-<stack>-<UTC time>.tar.gz`` (default DIR ``.state``, mode 0600) and prints
its path, size and contents. Inside, under one folder:

* ``stack/``: the outputs (``pulumi stack output --json``), the config, the resources
  (URN, type, created, modified: no inputs or outputs, which hold ciphertexts);
* ``cluster/``: version, nodes, ClusterPolicies, the Helm release's status (from Helm's
  storage: revision, status, chart; never its values), and per lab namespace
  (``gpu-operator``, ``default``, ``kube-system``) pods, events, DaemonSets and the names and
  key names of its Secrets (never their values);
* ``logs/<namespace>/<pod>/<container>.log``: the last lines of every operand container
  (every pod of ``gpu-operator``, minikube's ``nvidia-*`` addon pods in ``kube-system``, the
  lab's own Pods in ``default``);
* ``local/``: what this machine tells about the cluster whatever its API server does (the
  sim lab's process states and why its supervisor took it down; its component logs' tails);
* ``host/``: the host probe and the preflight findings, as the lab would see them now;
* ``tools.json``: tool and package versions, the toolchain decision;
* ``README.txt``: this list, and what could not be read and why.

The kubeconfig is read with ``scripts/pulumi stack output kubeconfig --show-secrets`` and
never written. Secrets are removed by :class:`ops.redact.Redactor`: everything the stack
marks secret, the kubeconfig's fields, the lab namespaces' Secret data, and secret shapes
(PEM, tokens). Before the archive is written the whole of it is checked for every learned
value; a leak stops the bundle (exit 1) instead of writing it.

When the cluster does not answer (or the stack has no outputs) the bundle holds what could
be read and README.txt says what could not. The bound: the liveness check (three requests of
5 s at most) says which component did not answer (the API server, or etcd as its readiness
check reports); after it, each read has 5 s to connect and 15 s to answer, and the first that
gets no answer ends the cluster reads (the rest are listed as skipped).

Exit codes: 0 written, 1 a secret would have leaked, 2 usage or the archive cannot be written.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core import run as cmd
from gpulab.core import yamlio
from gpulab.core.rawapi import pod_log
from gpulab.host.preflight import PreflightError
from gpulab.host.probe import probe_capture, probe_nvidia_smi
from gpulab.kube.client import is_transient, load_clients, ping
from ops.redact import Redactor
from variants import base, registry
from variants.registry import parse_config

ROOT: Final = Path(__file__).resolve().parents[1]
NAMESPACES: Final = ("gpu-operator", "default", "kube-system")
#: Tool -> argv printing its version (the first lines are kept): the tools every lab may use;
#: each variant adds its own (``VariantSpec.bundle_tools``: :func:`tool_versions`).
TOOLS: Final[dict[str, list[str]]] = {
    "kubectl": ["kubectl", "version", "--client"],
    "helm": ["helm", "version", "--short"],
    "docker": ["docker", "version", "--format", "{{.Client.Version}} / server {{.Server.Version}}"],
    "nvidia-smi": ["nvidia-smi", "--version"],
    "go": ["go", "version"],
}


def tool_versions() -> dict[str, list[str]]:
    """Tool -> the argv printing its version: :data:`TOOLS`, then every variant's
    ``bundle_tools`` in registry order (a bundle may be asked about any lab's tools)."""
    found = {name: list(argv) for name, argv in TOOLS.items()}
    for variant in registry.REGISTRY.values():
        for name, argv in variant.spec.bundle_tools.items():
            found.setdefault(name, list(argv))
    return found


PACKAGES: Final = (
    "pulumi",
    "pulumi-kubernetes",
    "pulumi-policy",
    "pulumi-command",
    "kubernetes",
    "PyYAML",
    "Jinja2",
)


@dataclass
class Bundle:
    """What was read: archive path -> text, what could not be read (``"what: why"``), and
    whether the stack says the lab is simulated."""

    files: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    simulated: bool = False
    #: Set when the API server stopped answering (a timeout, a refused connection): the
    #: cluster reads after it are skipped, so a frozen etcd costs one read's bound, not all.
    unanswered: str | None = None

    def add_json(self, name: str, value: Any) -> None:
        self.files[name] = json.dumps(value, indent=2, sort_keys=True, default=str) + "\n"

    def attempt(self, what: str, read: Callable[[], Any]) -> Any:
        """``read()``, or None with ``what: why`` recorded when it raises."""
        try:
            return read()
        except Exception as exc:  # a debug bundle records every failure and goes on
            self.problems.append(f"{what}: {_why(exc)}")
            return None

    def cluster_read(self, what: str, read: Callable[[], Any]) -> Any:
        """:meth:`attempt` for a read from the API server; after the first one that got no
        answer, the others are skipped (and listed as skipped)."""
        if self.unanswered is not None:
            self.problems.append(f"{what}: skipped (the API server stopped answering at {self.unanswered})")
            return None
        try:
            return read()
        except Exception as exc:  # recorded, and the cluster given up on when it is silent
            self.problems.append(f"{what}: {_why(exc)}")
            if is_transient(exc) or isinstance(exc, TimeoutError):
                self.unanswered = what
            return None


def _why(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    if status is not None and reason is not None:  # an ApiException: the server's own message
        try:
            message = json.loads(getattr(exc, "body", None) or "{}").get("message")
        except (ValueError, AttributeError):
            message = None
        return f"HTTP {status} {reason}" + (f": {message}" if message else "")
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1][:300] if text else ''}"


def _run(argv: Sequence[str], env: dict[str, str] | None = None, timeout: float = 120) -> str:
    """stdout of argv; raises RuntimeError with the last stderr line when it fails."""
    try:
        p = cmd.run(argv, env=env, timeout=timeout, cwd=ROOT)
    except cmd.ProgramNotFoundError as exc:
        raise RuntimeError(f"{argv[0]} not found") from exc
    except cmd.CommandTimeoutError as exc:
        raise RuntimeError(f"{argv[0]} timed out after {timeout:.0f}s") from exc
    if p.returncode != 0:
        last = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError(f"exit {p.returncode}: {last[-1][:300] if last else ''}")
    return p.stdout


class Stack:
    """The stack through ``scripts/pulumi`` (the project's toolchain, backend and passphrase)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.env = {**os.environ, "GPULAB_STACK": name}

    def pulumi(self, *args: str) -> str:
        return _run([str(ROOT / "scripts" / "pulumi"), *args, "--stack", self.name], self.env)

    def json(self, *args: str) -> Any:
        return json.loads(self.pulumi(*args) or "null")


def read_stack(stack: Stack, bundle: Bundle, redactor: Redactor) -> tuple[dict[str, Any], str | None]:
    """Outputs, config and resources into ``stack/``; learns every secret the stack marks.

    Returns the outputs (secrets as ``[secret]``) and the kubeconfig text (None if unread).
    """
    shown = bundle.attempt("stack outputs", lambda: stack.json("stack", "output", "--json", "--show-secrets"))
    plain = (
        bundle.attempt("stack outputs", lambda: stack.json("stack", "output", "--json")) if shown else None
    )
    outputs: dict[str, Any] = plain if isinstance(plain, dict) else {}
    kubeconfig = shown.get(o.KUBECONFIG) if isinstance(shown, dict) else None
    if isinstance(shown, dict):
        for key, value in shown.items():
            if outputs.get(key) != value:  # printed as "[secret]" without --show-secrets
                redactor.learn(value)
    if isinstance(kubeconfig, str):
        redactor.learn_kubeconfig(kubeconfig)
    bundle.add_json("stack/outputs.json", outputs)
    config = bundle.attempt("stack config", lambda: stack.json("config", "--json", "--show-secrets"))
    if isinstance(config, dict):
        for entry in config.values():
            if isinstance(entry, dict) and entry.get("secret"):
                redactor.learn(entry.get("value"))
                entry["value"] = "[secret]"
        bundle.add_json("stack/config.json", config)
    exported = bundle.attempt("stack resources", lambda: stack.json("stack", "export"))
    if isinstance(exported, dict):
        resources = (exported.get("deployment") or {}).get("resources") or []
        bundle.add_json(
            "stack/resources.json",
            [{k: r.get(k) for k in ("urn", "type", "id", "created", "modified")} for r in resources],
        )
    return outputs, kubeconfig if isinstance(kubeconfig, str) else None


def _helm_release(secret: dict[str, Any]) -> dict[str, Any]:
    """A Helm storage Secret -> the release's status (never its values or manifest)."""
    import base64
    import gzip

    labels = (secret.get("metadata") or {}).get("labels") or {}
    out: dict[str, Any] = {k: labels.get(k) for k in ("name", "version", "status", "modifiedAt")}
    raw = (secret.get("data") or {}).get("release")
    if raw:
        blob = base64.b64decode(base64.b64decode(raw))
        doc = json.loads(gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob)
        info, chart = doc.get("info") or {}, (doc.get("chart") or {}).get("metadata") or {}
        out.update(
            namespace=doc.get("namespace"),
            revision=doc.get("version"),
            info={k: info.get(k) for k in ("status", "description", "first_deployed", "last_deployed")},
            chart={k: chart.get(k) for k in ("name", "version", "appVersion")},
        )
    return out


def _plain(api: Any, items: Any) -> list[dict[str, Any]]:
    out = []
    for item in items:
        doc = api.sanitize_for_serialization(item)
        (doc.get("metadata") or {}).pop("managedFields", None)
        out.append(doc)
    return out


def read_cluster(kubeconfig: str, bundle: Bundle, redactor: Redactor, log_lines: int) -> None:
    """The lab's objects into ``cluster/``, the operand logs into ``logs/``."""
    from kubernetes import client

    api = load_clients(kubeconfig)
    # Bounded (5 s a request) and naming what did not answer: the API server, or etcd.
    version = bundle.attempt("cluster", partial(ping, api, timeout=5))
    if version is None:
        return
    bundle.add_json("cluster/version.json", version)
    core, apps, custom = client.CoreV1Api(api), client.AppsV1Api(api), client.CustomObjectsApi(api)

    def listed(call: Callable[..., Any], *args: str) -> list[dict[str, Any]]:
        return _plain(api, call(*args, _request_timeout=(5, 15)).items)

    nodes = bundle.cluster_read("nodes", partial(listed, core.list_node))
    if nodes is not None:
        bundle.add_json("cluster/nodes.json", nodes)
    policies = bundle.cluster_read(
        "ClusterPolicies",
        partial(
            custom.list_cluster_custom_object, "nvidia.com", "v1", "clusterpolicies", _request_timeout=(5, 15)
        ),
    )
    if policies is not None:
        bundle.add_json("cluster/clusterpolicies.json", policies.get("items", []))
    for ns in NAMESPACES:
        secrets = bundle.cluster_read(f"{ns} Secrets", partial(listed, core.list_namespaced_secret, ns))
        if secrets is not None:
            _add_secrets(ns, secrets, bundle, redactor)
        for kind, call in (
            ("pods", core.list_namespaced_pod),
            ("events", core.list_namespaced_event),
            ("daemonsets", apps.list_namespaced_daemon_set),
        ):
            found = bundle.cluster_read(f"{ns} {kind}", partial(listed, call, ns))
            if found is None:
                continue
            bundle.add_json(f"cluster/{ns}/{kind}.json", found)
            if kind == "pods":
                _read_logs(core, ns, found, bundle, log_lines)


def _add_secrets(ns: str, secrets: list[dict[str, Any]], bundle: Bundle, redactor: Redactor) -> None:
    """Learn every Secret's data; keep names, types and key names, and Helm's release status."""
    for s in secrets:
        redactor.learn_secret_data(s.get("data"))
        redactor.learn_secret_data(s.get("stringData"))
    releases = [s for s in secrets if s.get("type") == "helm.sh/release.v1"]
    if releases:
        bundle.add_json(
            f"cluster/{ns}/helm-releases.json",
            [
                bundle.attempt(f"Helm release {s['metadata']['name']}", partial(_helm_release, s))
                for s in releases
            ],
        )
    bundle.add_json(
        f"cluster/{ns}/secrets.json",
        [
            {"name": s["metadata"]["name"], "type": s.get("type"), "keys": sorted(s.get("data") or {})}
            for s in secrets
        ],
    )


def _read_logs(core: Any, ns: str, pods: list[dict[str, Any]], bundle: Bundle, lines: int) -> None:
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if ns == "default" and labels.get("app.kubernetes.io/part-of") != "gpu-lab":
            continue  # in default only the lab's own Pods (smoke, benchmark)
        if ns == "kube-system" and "nvidia" not in meta["name"]:
            continue  # there only minikube's device-plugin addon (devicePluginOwner minikube-addon)
        spec = pod.get("spec") or {}
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            name, where = c["name"], f"{ns}/{meta['name']}/{c['name']}"
            read = partial(
                pod_log,
                core,
                meta["name"],
                ns,
                container=name,
                tail_lines=lines,
                _request_timeout=(5, 15),
            )
            text = bundle.cluster_read(f"log {where}", read)
            if text is not None:
                bundle.files[f"logs/{where}.log"] = text if text.endswith("\n") or not text else text + "\n"


def read_host(stack: Stack, bundle: Bundle) -> None:
    """The host probe and the preflight findings for the stack's config, as ``make lab`` runs them."""
    config = bundle.attempt(
        f"host: stack config (the probe and preflight read stacks/{stack.name}.yaml instead)",
        lambda: stack.json("config", "--json"),
    )
    if isinstance(config, dict):
        raw = {k: str(v["value"]) for k, v in config.items() if isinstance(v, dict) and "value" in v}
    else:  # no stack yet: the tracked template
        template = yamlio.load((ROOT / "stacks" / f"{stack.name}.yaml").read_text()) or {}
        raw = {k: str(v) for k, v in (template.get("config") or {}).items()}
    cfg = bundle.attempt("host: config", lambda: parse_config(raw))
    if cfg is None:
        return
    mode = cfg.effective_host_probe
    probe: dict[str, Any] = {"mode": mode}
    try:
        facts = probe_capture(cfg.effective_capture) if mode == "capture" else None
        facts = probe_nvidia_smi() if mode == "nvidia-smi" else facts
        probe["facts"] = facts.to_json() if facts else None
    except PreflightError as exc:
        probe["failures"] = [_finding(f) for f in exc.failures]
    except Exception as exc:  # unparseable output, missing capture: recorded, not fatal
        probe["error"] = _why(exc)
    bundle.add_json("host/probe.json", probe)
    findings = bundle.attempt(
        "host: preflight",
        lambda: [
            *base.missing_tools(registry.get(cfg.cluster).spec),
            *registry.get(cfg.cluster).preflight(cfg),
        ],
    )
    if findings is not None:
        bundle.add_json(
            "host/preflight.json",
            {
                "variant": cfg.cluster,
                "findings": [_finding(f) for f in findings],
                "note": "the chart repository check is not run here (it needs the network): "
                "make preview runs it",
            },
        )


def _finding(f: Any) -> dict[str, Any]:
    return {k: getattr(f, k, None) for k in ("check", "ok", "message", "fix")}


def read_tools(bundle: Bundle) -> None:
    """``tools.json``: tool versions (absent tools say so), packages, the toolchain decision."""
    tools: dict[str, str] = {"python": platform.python_version()}
    cli = os.environ.get("GPULAB_PULUMI") or "pulumi"
    for name, argv in {"pulumi": [cli, "version"], **tool_versions()}.items():
        try:
            tools[name] = " | ".join(_run(argv, timeout=15).strip().splitlines()[:2])
        except RuntimeError as exc:
            tools[name] = f"unavailable ({exc})"
    packages = {}
    for dist in PACKAGES:
        try:
            packages[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            packages[dist] = "not installed"
    toolchain = {k: os.environ.get(k) for k in ("GPULAB_TOOLCHAIN_MODE", "GPULAB_TOOLCHAIN_REASON")}
    bundle.add_json("tools.json", {"tools": tools, "packages": packages, "toolchain": toolchain})


def _readme(stack: str, bundle: Bundle, redactor: Redactor, simulated: bool) -> str:
    note = (
        ["Simulated lab: kwok runs no containers, so only the smoke Pod has a log (served from a capture)."]
        if simulated
        else []
    )
    lines = [
        f"gpu-lab debug bundle: stack {stack}, made {datetime.now(UTC).isoformat(timespec='seconds')}",
        "",
        "Secrets removed: the kubeconfig is never included; "
        f"{redactor.learned} value(s) the stack or the cluster marks secret, PEM blocks, tokens "
        "and credential fields are replaced by [redacted].",
        "",
        "Inside:",
        *(f"  {name}" for name in sorted(bundle.files)),
        "",
        "Could not read:" if bundle.problems else "Everything was read.",
        *(f"  {p}" for p in bundle.problems),
        *note,
    ]
    return "\n".join(lines) + "\n"


def collect(stack_name: str, log_lines: int = 200) -> tuple[Bundle, Redactor]:
    """Read everything (see module docstring); the files are not scrubbed yet."""
    bundle, redactor, stack = Bundle(), Redactor(), Stack(stack_name)
    outputs, kubeconfig = read_stack(stack, bundle, redactor)
    bundle.simulated = outputs.get(o.SIMULATED) is True
    if kubeconfig:
        bundle.attempt("cluster", lambda: read_cluster(kubeconfig, bundle, redactor, log_lines))
    else:
        bundle.problems.append("cluster: the stack has no kubeconfig output (no lab built, or unreadable)")
    read_local(stack, bundle)
    read_host(stack, bundle)
    read_tools(bundle)
    return bundle, redactor


def read_local(stack: Stack, bundle: Bundle, lines: int = 200) -> None:
    """What this machine says about the cluster whatever the API server does (``local/``):
    the variant's status line (``Variant.status``'s ``note``: the sim lab's processes, why its
    supervisor took it down) and the last lines of its own log files (its ``files``: the sim
    control plane's component logs)."""
    config = bundle.attempt("local: stack config", lambda: stack.json("config", "--json"))
    raw = {k: str(v["value"]) for k, v in (config or {}).items() if isinstance(v, dict) and "value" in v}
    cfg = bundle.attempt("local: config", lambda: parse_config(raw))
    if cfg is None:
        return
    variant = registry.get(cfg.cluster)
    status = bundle.attempt("local: status", lambda: variant.status(cfg.profile, ROOT))
    if status is None:
        return
    if status.note:
        bundle.files["local/status.txt"] = status.note + "\n"
    files: Mapping[str, Path] = status.files
    for name, path in files.items():
        text = bundle.attempt(f"local: {name}", partial(path.read_text, encoding="utf-8", errors="replace"))
        if text is not None:
            bundle.files[f"local/{name}"] = "".join(text.splitlines(keepends=True)[-lines:])


def write(bundle: Bundle, redactor: Redactor, stack: str, out_dir: Path) -> tuple[Path, dict[str, int]]:
    """Scrub every file, check the whole for leaks, write the tar.gz (mode 0600).

    Raises:
        RuntimeError: a learned secret value is still in the scrubbed files.
    """
    files = {}
    for name, text in bundle.files.items():
        files[name] = redactor.text(text) if not name.endswith(".json") else _scrub_json(redactor, text)
    files["README.txt"] = redactor.text(_readme(stack, bundle, redactor, bundle.simulated))
    leaks = redactor.leaks("\n".join(files.values()))
    if leaks:
        raise RuntimeError(f"secret values still present after redaction ({', '.join(leaks)}): not written")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    top = f"debug-bundle-{stack}-{stamp}"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{top}.tar.gz"
    sizes = {}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name in ["README.txt", *sorted(n for n in files if n != "README.txt")]:
            data = files[name].encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
            sizes[name] = len(data)
    return path, sizes


def _scrub_json(redactor: Redactor, text: str) -> str:
    return json.dumps(redactor.json(json.loads(text)), indent=2, sort_keys=True) + "\n"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} MiB"


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m ops.bundle", description="Write the lab's debug bundle.")
    ap.add_argument("--stack", default=os.environ.get("GPULAB_STACK"), help="default: $GPULAB_STACK")
    ap.add_argument("--out-dir", default=str(ROOT / ".state"), help="default: .state")
    ap.add_argument("--log-lines", type=int, default=200, help="last lines of each container log")
    args = ap.parse_args(argv)
    if not args.stack:
        print("gpu-lab: no stack: pass --stack or set GPULAB_STACK (make debug-bundle does)", file=sys.stderr)
        return 2
    bundle, redactor = collect(args.stack, args.log_lines)
    try:
        path, sizes = write(bundle, redactor, args.stack, Path(args.out_dir))
    except RuntimeError as exc:
        print(f"gpu-lab: debug bundle: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"gpu-lab: debug bundle: cannot write to {args.out_dir}: {exc}", file=sys.stderr)
        return 2
    shown = os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    print(f"gpu-lab: debug bundle {shown} ({_size(path.stat().st_size)}, {len(sizes)} files):")
    width = max(len(n) for n in sizes)
    for name, size in sizes.items():
        print(f"  {name:<{width}}  {_size(size)}")
    sys.stdout.flush()
    for problem in bundle.problems:
        print(f"gpu-lab: could not read {problem}", file=sys.stderr)
    local = bundle.files.get("local/status.txt")
    if local and any(p.startswith("cluster") for p in bundle.problems):
        # Why the cluster did not answer, as this machine sees it (a stopped etcd, a control
        # plane its supervisor took down): the API server's own answer cannot say.
        print(f"gpu-lab: this machine says: {local.strip()}", file=sys.stderr)
    sys.stderr.flush()
    print(
        f"gpu-lab: secrets removed ({redactor.learned} known secret values, PEM blocks, tokens); "
        f"look inside with `tar -tzf {shown}`"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
