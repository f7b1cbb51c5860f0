"""The simulated cluster's lifecycle: :func:`up`, :func:`down` and :func:`status`.

``up`` writes the kwokctl config (:mod:`variants.sim.ctl.render`), has kwokctl create the
control plane, applies the GPU nodes and waits until they are usable; the processes, ports
and directories are handled by :mod:`variants.sim.ctl.process`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from gpulab.core import yamlio
from gpulab.kube import identity
from variants.sim.ctl import dra as sim_dra
from variants.sim.ctl import fleet as sim_fleet
from variants.sim.ctl import ports as lab_ports
from variants.sim.ctl import supervise
from variants.sim.ctl.gpus import NodeGpus
from variants.sim.ctl.process import (
    BUILD_FIX,
    MARKER,
    Paths,
    PortInUseError,
    SimClusterError,
    Tools,
    _cluster_pids,
    _dead_components,
    _diagnose_start_failure,
    _env,
    _has_fileno,
    _kubectl,
    _log,
    _run,
    _tail,
    _teardown,
)
from variants.sim.ctl.render import (
    COMPUTE_CONTAINER_LOGS,
    DEFAULT_LOG_NAMESPACES,
    DEFAULT_LOG_PODS,
    DEFAULT_NODE_NAME,
    CaptureInfo,
    capture_listing,
    capture_name,
    compute_container_log_file,
    compute_logs,
    load_capture,
    load_vectoradd,
    node_names,
    parse_capture,
    render_cri_log,
    render_kwokctl_config,
    render_node_manifest,
    smoke_log,
    stale_nodes,
    validate_name,
)


@dataclasses.dataclass(frozen=True)
class UpOptions:
    """Validated inputs of :func:`up` (see :mod:`variants.sim.ctl` for the CLI flags)."""

    name: str
    workdir: Path
    gpus: int = 1
    bin_dir: Path | None = None
    node_name: str = DEFAULT_NODE_NAME
    nodes: int = 1
    log_namespaces: tuple[str, ...] = DEFAULT_LOG_NAMESPACES
    log_pods: tuple[str, ...] = DEFAULT_LOG_PODS
    timeout: float = 300.0
    apiserver_advertise_address: str | None = None
    #: Time-slicing replicas, MIG devices ``(("1g.18gb", 7),)`` and strategy: what the node
    #: advertises (:class:`variants.sim.ctl.gpus.NodeGpus`); the capture served as the log.
    replicas: int = 1
    mig: tuple[tuple[str, int], ...] = ()
    mig_strategy: str = "none"
    capture: str | None = None
    #: Time-slicing's rename: the node advertises ``nvidia.com/gpu.shared``.
    rename: bool = False
    #: GPUs the smoke Pod is given (its simulated log lists that many); None: every one.
    smoke_gpus: int | None = None
    #: A fleet of nodes of their own sizes (``--node-spec``: :mod:`variants.sim.ctl.fleet`);
    #: empty: ``nodes`` nodes of ``gpus`` each.
    fleet: tuple[sim_fleet.FleetNode, ...] = ()
    #: The GPU stack found installed (``--preinstalled``): the device-plugin DaemonSet of
    #: somebody else's install, simulated.
    preinstalled: bool = False
    #: ``gpuStack: dra`` (``--dra``): the nodes advertise no GPU resource, and each gets the
    #: ResourceSlice NVIDIA's DRA kubelet plugin would publish (:mod:`variants.sim.ctl.dra`).
    dra: bool = False

    def node_list(self) -> list[str]:
        """The nodes' names: the fleet's, else ``node_name``, ``node_name-2``, ..."""
        return [n.name for n in self.fleet] if self.fleet else node_names(self.node_name, self.nodes)

    def gpus_of(self, node: str) -> NodeGpus:
        """What node ``node`` advertises."""
        for n in self.fleet:
            if n.name == node:
                # Time-slicing shares a fleet node's GPUs as it does the single node's.
                return NodeGpus(n.advertised, self.replicas, rename=self.rename)
        return self.node_gpus

    @property
    def node_gpus(self) -> NodeGpus:
        """What each node advertises (no GPU resource under DRA: no device plugin runs)."""
        return NodeGpus(0 if self.dra else self.gpus, self.replicas, self.mig, self.mig_strategy, self.rename)

    def __post_init__(self) -> None:
        validate_name("cluster name", self.name)
        validate_name("node name", self.node_name)
        node_names(self.node_name, self.nodes)
        if self.fleet and self.nodes != 1:
            raise ValueError("--node-spec and --nodes exclude each other (the specs name every node)")
        if self.dra and (self.fleet or self.mig or self.replicas > 1 or self.preinstalled):
            raise ValueError(
                "--dra publishes whole GPUs of --gpus per node: "
                "no --node-spec, --mig, --replicas or --preinstalled"
            )
        if self.capture is None:
            capture_name(self.gpus)
        self.node_gpus  # noqa: B018 (validates the GPU settings)
        if not self.log_namespaces or not self.log_pods:
            raise ValueError("--log-namespace and --log-pod need at least one value each")
        for ns in self.log_namespaces:
            validate_name("log namespace", ns)
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout}")


def kube_version_of(tools: Tools) -> str:
    """The stamped version of the kube-apiserver binary, e.g. ``"v1.36.3"``.

    Raises:
        SimClusterError: the binary is unstamped (``v0.0.0``) or does not run.
    """
    proc = _run([tools.path("kube-apiserver"), "--version"], {**os.environ}, timeout=60)
    m = re.search(r"Kubernetes (v\d+\.\d+\.\d+\S*)", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not m:
        raise SimClusterError(
            f"`kube-apiserver --version` failed (exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[:300]}",
            BUILD_FIX,
        )
    if m.group(1).startswith("v0.0.0"):
        raise SimClusterError(
            f"kube-apiserver in {tools.bin_dir} is not version-stamped ({m.group(1)}); "
            "Helm would reject charts",
            BUILD_FIX,
        )
    return m.group(1)


def _api_ready(tools: Tools, paths: Paths) -> bool:
    if not paths.kubeconfig.exists():
        return False
    proc = _kubectl(tools, paths, ["get", "--raw", "/readyz"], timeout=20)
    return proc.returncode == 0 and proc.stdout.strip() == "ok"


def _write_kubeconfig(tools: Tools, paths: Paths) -> str:
    proc = _run(
        [tools.path("kwokctl"), "--name", paths.name, "get", "kubeconfig"],
        _env(paths, tools),
        timeout=60,
    )
    if proc.returncode != 0 or "apiVersion" not in proc.stdout:
        raise SimClusterError(
            f"`kwokctl get kubeconfig` failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}",
            f"run `python -m variants.sim.ctl down --name {paths.name} --workdir {paths.workdir}` "
            "and `up` again",
        )
    paths.kubeconfig.touch(mode=0o600, exist_ok=True)
    paths.kubeconfig.write_text(proc.stdout, encoding="utf-8")
    return proc.stdout


def _api_server_of(kubeconfig: str) -> str:
    doc = yamlio.load(kubeconfig)
    return str(doc["clusters"][0]["cluster"]["server"])


def _server_version(tools: Tools, paths: Paths) -> str:
    proc = _kubectl(tools, paths, ["get", "--raw", "/version"])
    if proc.returncode != 0:
        raise SimClusterError(f"GET /version failed: {proc.stderr.strip()}", "check the API server log")
    return str(json.loads(proc.stdout)["gitVersion"])


def _held_ports(paths: Paths) -> dict[str, int] | None:
    """The ports this lab holds (its ``ports.json``), or None before the first create."""
    try:
        doc = json.loads((paths.workdir / lab_ports.PORTS_FILE).read_text(encoding="utf-8"))
        return {o: int(doc[o]) for o in lab_ports.OPTIONS}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _lab_exists(workdir: str) -> bool:
    return (Path(workdir) / MARKER).exists()


def _config_for(
    opts: UpOptions, tools: Tools, paths: Paths, kube_version: str, ports: dict[str, int] | None = None
) -> str:
    return render_kwokctl_config(
        kube_version=kube_version,
        bin_dir=tools.bin_dir,
        log_file=paths.log_file,
        log_namespaces=opts.log_namespaces,
        log_pods=opts.log_pods,
        apiserver_advertise_address=opts.apiserver_advertise_address,
        compute_log_file=paths.compute_log_file,
        ports=ports if ports is not None else _held_ports(paths),
        extra_logs=sim_fleet.cluster_logs(paths.workdir, opts.fleet, opts.log_namespaces),
    )


#: Attempts of ``kwokctl create cluster`` when a port was taken under it.
CREATE_ATTEMPTS: Final = 3
#: Components that only talk to the API server. kwokctl starts them beside it (one group,
#: ``components.GroupByLinks``, kwok v0.8.0), and kube-controller-manager gives up when
#: ``/healthz`` is not ok within 10 s of its start (``WaitForAPIServer(client, 10*time.Second)``,
#: cmd/kube-controller-manager/app/controllermanager.go, Kubernetes v1.36.3): on a loaded
#: machine the API server's ``rbac/bootstrap-roles`` hook takes longer. A kubelet restarts
#: such a static Pod; here ``kwokctl start cluster`` does (it starts only the components
#: whose pid file names no running process: ``ForkExec``, pkg/kwokctl/runtime/exec.go).
RESTARTABLE: Final = frozenset({"kube-controller-manager", "kube-scheduler", "kwok-controller"})
#: Restarts of those components during one create before it is called failed.
START_RESTARTS: Final = 3


@contextlib.contextmanager
def _create_lock() -> Iterator[None]:
    """Serialise cluster creation among this user's processes.

    kwokctl picks its ports by probing downwards from 32767, so two concurrent creates
    choose the same ports and one loses. Holding this lock until the components listen
    makes the next create see those ports taken and pick others.
    """
    path = lab_ports.machine_dir() / f"gpulab-simcluster-{os.getuid()}.lock"
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _create_cluster(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> None:
    fresh = False
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            with _create_lock():
                # The lab's own ports, none another live lab holds (variants.sim.ctl.ports).
                held = lab_ports.reserve(paths.workdir, _lab_exists, fresh=fresh)
                paths.config_file.write_text(
                    _config_for(opts, tools, paths, kube_version, held), encoding="utf-8"
                )
                _create_once(opts, tools, paths, kube_version)
            return
        except PortInUseError as e:
            if attempt == CREATE_ATTEMPTS:
                raise
            _log(f"{e.cause.splitlines()[0]}; retrying on other ports ({attempt}/{CREATE_ATTEMPTS - 1})")
            fresh = True
            time.sleep(random.uniform(0.5, 2.0))


def _create_once(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> None:
    wait = max(30, int(opts.timeout))
    argv = [
        tools.path("kwokctl"),
        "--name",
        opts.name,
        "create",
        "cluster",
        "--runtime",
        "binary",
        "--config",
        str(paths.config_file),
        "--kubeconfig",
        "",  # never add a context to ~/.kube/config
        "--wait",
        f"{wait}s",
    ]
    _log(
        f"creating cluster {opts.name!r} in {paths.workdir} (kube {kube_version}, "
        f"{opts.nodes} node(s) x {opts.gpus} GPU)"
    )
    start = time.monotonic()
    out = sys.stderr if _has_fileno(sys.stderr) else subprocess.DEVNULL
    # Popen, not run: kwokctl waits up to 2 min for an API server that already exited,
    # so a component that dies is detected here and reported at once.
    kwokctl = subprocess.Popen(argv, env=_env(paths, tools), stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = start + wait + 120
    dead: list[str] = []
    while kwokctl.poll() is None:
        dead = [c for c in _dead_components(paths) if c not in RESTARTABLE]
        if dead or time.monotonic() > deadline:
            kwokctl.terminate()
            try:
                kwokctl.wait(10)
            except subprocess.TimeoutExpired:
                kwokctl.kill()
                kwokctl.wait()
            break
        time.sleep(0.5)
    if kwokctl.returncode != 0 or dead:
        err = _diagnose_start_failure(paths, dead)
        why = f"{', '.join(dead)} exited" if dead else f"kwokctl exited {kwokctl.returncode}"
        _log(f"cluster did not start ({why}); stopping what did")
        _teardown(paths, tools, remove_workdir=False)
        raise err
    # kwokctl only logs a failed --wait; check readiness ourselves.
    _write_kubeconfig(tools, paths)
    _settle(tools, paths)
    _log(f"control plane ready in {time.monotonic() - start:.1f}s")


def _settle(tools: Tools, paths: Paths) -> None:
    """Once kwokctl is done: wait for the API server, then start again what of
    :data:`RESTARTABLE` exited meanwhile, at most :data:`START_RESTARTS` times.

    Raises:
        SimClusterError: the API server is not ready within 60 s, a component outside
            :data:`RESTARTABLE` exited, or the restarts are spent (the cluster is torn down
            first, its logs kept in ``failed-start-logs/``).
    """
    for restart in range(START_RESTARTS + 1):
        _await_api(tools, paths)
        dead = _dead_components(paths)
        if not dead:
            return
        if restart == START_RESTARTS or not set(dead) <= RESTARTABLE:
            err = _diagnose_start_failure(paths, dead)
            _teardown(paths, tools, remove_workdir=False)
            raise err
        _restart_components(tools, paths, dead, restart + 1)


def _await_api(tools: Tools, paths: Paths, seconds: float = 60) -> None:
    """Wait until the API server's ``/readyz`` is ok; tear the cluster down and raise the
    diagnosed start failure (:class:`SimClusterError`) after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not _api_ready(tools, paths):
        if time.monotonic() > deadline:
            err = _diagnose_start_failure(paths, _dead_components(paths))
            _teardown(paths, tools, remove_workdir=False)
            raise err
        time.sleep(1)


def _restart_components(tools: Tools, paths: Paths, dead: Sequence[str], n: int) -> None:
    """Start again the components in ``dead`` (all in :data:`RESTARTABLE`) once the API
    server is ready, through ``kwokctl start cluster``. Each one's log of the run that exited
    is kept as ``logs/<name>.exit-<n>.log`` (kwokctl truncates the log on start:
    ``file.Open`` uses ``O_TRUNC``, pkg/utils/file/file.go, kwok v0.8.0)."""
    for name in dead:
        log = paths.cluster_dir / "logs" / f"{name}.log"
        if log.exists():
            log.replace(log.with_name(f"{name}.exit-{n}.log"))
        _log(f"{name} exited while the API server started; starting it again ({n}/{START_RESTARTS})")
    proc = _run(
        [tools.path("kwokctl"), "--name", paths.name, "start", "cluster", "--timeout", "120s"],
        _env(paths, tools),
        timeout=180,
    )
    if proc.returncode != 0:
        err = SimClusterError(
            f"`kwokctl start cluster` could not start {', '.join(dead)} again "
            f"(exit {proc.returncode}): {proc.stderr.strip()[-500:]}",
            f"run `python -m variants.sim.ctl down --name {paths.name} --workdir {paths.workdir}` "
            "and `up` again",
        )
        _teardown(paths, tools, remove_workdir=False)
        raise err


def _ensure_node(opts: UpOptions, tools: Tools, paths: Paths, info: CaptureInfo, node_name: str) -> None:
    """Create or update one GPU node; its status capacity/allocatable are patched too,
    because an existing node keeps its status on apply. A fleet node's GFD count label says
    what it has, its allocatable what it advertises (:mod:`variants.sim.ctl.fleet`)."""
    gpus = opts.gpus_of(node_name)
    manifest = render_node_manifest(node_name, opts.gpus, info, gpus)
    for n in opts.fleet:
        if n.name == node_name:
            manifest["metadata"]["labels"]["nvidia.com/gpu.count"] = str(n.gpus)
            # The kubelet counts unhealthy devices in capacity, healthy ones in allocatable
            # (kubernetes pkg/kubelet/cm/devicemanager/manager.go GetCapacity).
            manifest["status"]["capacity"][gpus.gpu_key] = str(n.gpus * gpus.replicas)
    if opts.dra:  # the GPUs are the ResourceSlice's; GFD's count still says how many
        manifest["metadata"]["labels"]["nvidia.com/gpu.count"] = str(opts.gpus)
    stale = gpus.stale()  # merge-patch nulls: a key an earlier up set and this one has not
    status = {"status": {k: {**manifest["status"][k], **stale} for k in ("capacity", "allocatable")}}
    proc = _kubectl(
        tools,
        paths,
        ["apply", "--server-side", "--force-conflicts", "-f", "-"],
        input_text=json.dumps(manifest),
    )
    if proc.returncode != 0:
        raise SimClusterError(
            f"creating node {node_name} failed: {proc.stderr.strip()}",
            "check the API server log",
        )
    # Labels that a previous `up` with another GPU count set are replaced by apply; the
    # status is a subresource, so it is patched explicitly.
    proc = _kubectl(
        tools,
        paths,
        [
            "patch",
            "node",
            node_name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        ],
    )
    if proc.returncode != 0:
        raise SimClusterError(
            f"patching node {node_name} status failed: {proc.stderr.strip()}",
            "check the API server log",
        )


def _apply(tools: Tools, paths: Paths, docs: list[dict[str, Any]], what: str) -> None:
    """``kubectl apply --server-side`` of ``docs`` (a List)."""
    doc = {"apiVersion": "v1", "kind": "List", "items": docs}
    proc = _kubectl(
        tools, paths, ["apply", "--server-side", "--force-conflicts", "-f", "-"], input_text=json.dumps(doc)
    )
    if proc.returncode != 0:
        raise SimClusterError(f"creating {what} failed: {proc.stderr.strip()}", "check the API server log")


def _node_state(tools: Tools, paths: Paths, node_name: str) -> tuple[bool, dict[str, str] | None]:
    """(Ready, status.allocatable) of the node, or (False, None) when absent."""
    proc = _kubectl(tools, paths, ["get", "node", node_name, "-o", "json"])
    if proc.returncode != 0:
        return False, None
    node = json.loads(proc.stdout)
    conds = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return ready, dict(node.get("status", {}).get("allocatable") or {})


def _remove_stale_nodes(opts: UpOptions, tools: Tools, paths: Paths, wanted: Sequence[str]) -> None:
    """Delete the nodes an earlier ``up`` with more ``--nodes`` created."""
    proc = _kubectl(tools, paths, ["get", "nodes", "-o", "name"])
    existing = [line.removeprefix("node/") for line in proc.stdout.split()] if proc.returncode == 0 else []
    for name in stale_nodes(existing, opts.node_name, wanted):
        _log(f"deleting node {name} (not among the {len(wanted)} asked for)")
        _kubectl(tools, paths, ["delete", "node", name, "--wait=false"])


def _wait_usable(opts: UpOptions, tools: Tools, paths: Paths, names: Sequence[str]) -> None:
    """Wait until every node is Ready with the GPUs and Pods can be created in every log namespace."""
    deadline = time.monotonic() + opts.timeout
    want = opts.node_gpus.resources()
    pending = list(names)
    while True:
        ready, alloc = False, None
        while pending:
            ready, alloc = _node_state(tools, paths, pending[0])
            want = opts.gpus_of(pending[0]).resources()
            if not (ready and alloc is not None and opts.gpus_of(pending[0]).advertised_by(alloc)):
                break
            pending.pop(0)
        sa = _kubectl(
            tools,
            paths,
            ["get", "serviceaccount", "default", "-n", "default", "-o", "name"],
        )
        if not pending and sa.returncode == 0:
            return
        if time.monotonic() > deadline:
            kwok_log = paths.cluster_dir / "logs" / "kwok-controller.log"
            node = pending[0] if pending else names[-1]
            key = opts.node_gpus.gpu_key
            raise SimClusterError(
                f"node {node} not usable after {opts.timeout:.0f}s (Ready={ready}, "
                f"allocatable {key}={(alloc or {}).get(key)!r}, want {want}; "
                "default ServiceAccount "
                f"{'present' if sa.returncode == 0 else 'missing'}); kwok log {kwok_log}:\n{_tail(kwok_log)}",
                "check the kwok-controller and kube-controller-manager logs in that directory",
            )
        time.sleep(0.5)


#: The identity recorded when the cluster was created (gpulab.kube.identity), in the work dir.
IDENTITY_FILE: Final = "identity.json"


class Interrupted(SimClusterError):
    """``up`` was stopped by a signal (Ctrl-C, SIGTERM, a closed terminal); what it started
    has been removed."""


def _live_identity(tools: Tools, paths: Paths) -> identity.Identity:
    """The identity of the cluster the work dir's kubeconfig reaches now.

    Raises:
        SimClusterError: Namespace kube-system cannot be read.
    """
    server, ca = identity.from_kubeconfig(paths.kubeconfig.read_text(encoding="utf-8"))
    proc = _kubectl(tools, paths, ["get", "namespace", "kube-system", "-o", "jsonpath={.metadata.uid}"])
    uid = proc.stdout.strip()
    if proc.returncode != 0 or not uid:
        raise SimClusterError(
            f"reading Namespace kube-system failed: {(proc.stderr or proc.stdout).strip()[-300:]}",
            "check the API server and etcd logs in the cluster directory",
        )
    return identity.Identity(server, ca, uid)


def recorded_identity(paths: Paths) -> identity.Identity | None:
    """The identity written when the cluster was created, or None."""
    try:
        return identity.Identity.from_json(
            json.loads((paths.workdir / IDENTITY_FILE).read_text(encoding="utf-8"))
        )
    except (OSError, ValueError, identity.IdentityError):
        return None


def _record_identity(tools: Tools, paths: Paths) -> identity.Identity:
    live = _live_identity(tools, paths)
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    rec = identity.Identity(live.server, live.ca_sha256, live.kube_system_uid, now)
    (paths.workdir / IDENTITY_FILE).write_text(json.dumps(rec.to_json(), indent=1) + "\n", encoding="utf-8")
    return rec


def own_cluster(tools: Tools, paths: Paths) -> tuple[bool, str]:
    """(True, "") when the cluster answering is the one created here (its kube-system UID is the
    recorded one); else (False, why)."""
    rec = recorded_identity(paths)
    if rec is None:
        return False, "no identity was recorded when it was created"
    try:
        live = _live_identity(tools, paths)
    except (SimClusterError, identity.IdentityError) as exc:
        return False, str(exc).splitlines()[0]
    if rec.same_cluster(live):
        return True, ""
    return False, f"it reaches another cluster: recorded {rec.describe()}, now {live.describe()}"


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`KeyboardInterrupt` like SIGINT does, so ``up`` can
    remove what it started before it exits."""

    def raise_interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {sig: signal.signal(sig, raise_interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def up(opts: UpOptions) -> dict[str, Any]:
    """Bring the cluster up (or reuse a healthy one of its own) and return the JSON result.

    A healthy cluster is reused only when it is this work dir's own (its kube-system UID is
    the one recorded at create, :data:`IDENTITY_FILE`), its supervisor has not taken it down
    and its configuration (ports included) is the same. A new cluster gets ports no other
    live lab holds (:mod:`variants.sim.ctl.ports`), its identity recorded, and a supervisor
    (:mod:`variants.sim.ctl.supervise`). Interrupted (SIGINT, SIGTERM, SIGHUP) while it
    creates, it removes the cluster and the work dir it made, then raises.

    Returns:
        ``{"kubeconfig": str (flattened), "kubernetesVersion": "v1.36.3",
        "apiServer": "https://127.0.0.1:PORT", "node": str (the first), "nodes": [str],
        "gpus": int (per node), "totalGpus": int, "workdir": str, "identity": {"server",
        "caSha256", "kubeSystemUid", "createdAt"}, "ports": {option: port}}``

    Raises:
        SimClusterError: with the cause and the first fix (:class:`Interrupted` on a signal).
    """
    tools = Tools.locate(opts.bin_dir)
    paths = Paths(opts.name, opts.workdir.expanduser().absolute())
    kube_version = kube_version_of(tools)
    capture = load_capture(opts.gpus, opts.capture)
    info = parse_capture(capture)

    if paths.workdir.exists() and not paths.marker.exists() and any(paths.workdir.iterdir()):
        raise SimClusterError(
            f"work dir {paths.workdir} is not empty and was not made by variants.sim.ctl",
            "pass an empty or new --workdir (down removes the whole directory)",
        )
    creating = False
    try:
        with _interruptible():
            paths.workdir.mkdir(parents=True, exist_ok=True)
            # The lab's record of what it started, by name, on disk: destroy removes a cluster
            # whose create never reached the stack's state (an interrupted run) through it.
            paths.marker.write_text(json.dumps({"name": opts.name}) + "\n", encoding="utf-8")
            paths.log_file.parent.mkdir(parents=True, exist_ok=True)
            # Rewritten on every up: the capture follows --gpus, and kwok reads the file per request.
            smoke = smoke_log(capture, opts.capture or capture_name(opts.gpus), opts.smoke_gpus)
            paths.log_file.write_text(render_cri_log(smoke, dt.datetime.now(dt.UTC)), encoding="utf-8")
            paths.compute_log_file.write_text(
                render_cri_log(load_vectoradd(), dt.datetime.now(dt.UTC)), encoding="utf-8"
            )
            _write_fleet_logs(opts, paths, capture)
            # Each compute container lists the one GPU it was given (render.compute_logs).
            own = compute_logs(opts.capture or capture_name(opts.gpus))
            for i in range(COMPUTE_CONTAINER_LOGS):
                text = own[i] if i < len(own) else load_vectoradd()
                compute_container_log_file(paths.compute_log_file, i).write_text(
                    render_cri_log(text, dt.datetime.now(dt.UTC)), encoding="utf-8"
                )
            reuse = _reusable(opts, tools, paths, kube_version)
            if not reuse:
                creating = True
                _create_cluster(opts, tools, paths, kube_version)
                _record_identity(tools, paths)
            result = _finish(opts, tools, paths, info)
            if supervise.supervisor_pid(paths.workdir) is None:
                supervise.spawn(opts.name, paths.workdir, paths.cluster_dir)
            return result
    except KeyboardInterrupt as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not stop the clean-up
        how = str(exc) or "SIGINT"
        if creating:
            _log(f"interrupted ({how}) while creating the cluster; removing what this up started")
            with contextlib.suppress(SimClusterError, OSError):
                _teardown(paths, tools, remove_workdir=True)
        raise Interrupted(
            f"interrupted ({how})"
            + ("; the half-made cluster and its directory were removed" if creating else ""),
            "run `make lab` again",
        ) from None


def _write_fleet_logs(opts: UpOptions, paths: Paths, capture: str) -> None:
    """Each fleet node's smoke and compute logs (:mod:`variants.sim.ctl.fleet`), listing its GPUs."""
    if not opts.fleet:
        return
    sim_fleet.log_dir(paths.workdir).mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    vectoradd = load_vectoradd()
    for n in opts.fleet:
        # The Pod holds what the node advertises: its listing shows those.
        uuids = sim_fleet.gpu_uuids(opts.name, n.name, n.advertised)
        sim_fleet.smoke_log_file(paths.workdir, n.name).write_text(
            render_cri_log(sim_fleet.smoke_log(capture, uuids), now), encoding="utf-8"
        )
        for i, u in enumerate(uuids):
            sim_fleet.compute_log_file(paths.workdir, n.name, i).write_text(
                render_cri_log(sim_fleet.compute_log(u, vectoradd), now), encoding="utf-8"
            )


def _publish_slices(
    opts: UpOptions, tools: Tools, paths: Paths, info: CaptureInfo, nodes: Sequence[str]
) -> None:
    """Each node's ResourceSlice (:mod:`variants.sim.ctl.dra`), listing the capture's GPUs."""
    listing = capture_listing(opts.capture or capture_name(opts.gpus))
    gpus = sim_dra.listed_gpus("\n".join(listing))[: opts.gpus]
    if len(gpus) < opts.gpus:
        raise SimClusterError(
            f"the capture lists {len(gpus)} GPUs with UUIDs, --gpus asks for {opts.gpus}",
            "use a capture with an nvidia-smi-L.txt listing every GPU",
        )
    slices = [
        sim_dra.resource_slice(n, gpus, info.driver_version, info.cuda_version, info.memory_mib)
        for n in nodes
    ]
    _apply(tools, paths, slices, "the simulated ResourceSlices")


def _reusable(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> bool:
    """True when the work dir's cluster runs, is its own and is configured as asked; otherwise
    what there is of it is stopped (the directory stays) and False is returned."""
    if not paths.cluster_dir.exists():
        return False
    # The GPU count is not part of the kwokctl config (node and log file are updated in
    # place); anything else that differs (binaries, version, ports, log selectors, Stages)
    # needs a new cluster.
    old = paths.config_file.read_text(encoding="utf-8") if paths.config_file.exists() else ""
    same_config = old == _config_for(opts, tools, paths, kube_version)
    down = supervise.down_record(paths.workdir)
    why = ""
    try:
        _write_kubeconfig(tools, paths)
        healthy = down is None and _api_ready(tools, paths) and bool(_cluster_pids(paths))
        if healthy:
            healthy, why = own_cluster(tools, paths)
    except SimClusterError:
        healthy = False
    if healthy and same_config:
        _log(f"cluster {opts.name!r} is already running; reusing it")
        return True
    if down is not None:
        why = supervise.describe_down(down)
    why = "its configuration changed" if healthy else (why or "it is not healthy")
    _log(f"cluster {opts.name!r} exists but {why}; recreating it")
    _teardown(paths, tools, remove_workdir=False)
    return False


def _finish(opts: UpOptions, tools: Tools, paths: Paths, info: CaptureInfo) -> dict[str, Any]:
    names = opts.node_list()
    for node in names:
        _ensure_node(opts, tools, paths, info, node)
    _remove_stale_nodes(opts, tools, paths, names)
    _wait_usable(opts, tools, paths, names)
    if opts.preinstalled:
        _apply(tools, paths, sim_fleet.preinstalled_manifests(), "the found GPU stack")
    if opts.dra:
        _publish_slices(opts, tools, paths, info, names)
    # A component that lost a port race can exit after the API server answered; then a
    # stranger (e.g. another cluster's kwok) may be serving this node's kubelet endpoint.
    dead = _dead_components(paths)
    if dead:
        err = _diagnose_start_failure(paths, dead)
        _teardown(paths, tools, remove_workdir=False)
        raise err
    rec = recorded_identity(paths) or _record_identity(tools, paths)
    kubeconfig = paths.kubeconfig.read_text(encoding="utf-8")
    return {
        "kubeconfig": kubeconfig,
        "kubernetesVersion": _server_version(tools, paths),
        "apiServer": _api_server_of(kubeconfig),
        "node": names[0],
        "nodes": names,
        "gpus": opts.gpus,
        "totalGpus": sum(n.gpus for n in opts.fleet) if opts.fleet else opts.gpus * len(names),
        "workdir": str(paths.workdir),
        "identity": rec.to_json(),
        "ports": _held_ports(paths) or {},
    }


def down(name: str, workdir: Path, bin_dir: Path | None = None) -> dict[str, Any]:
    """Stop the cluster and remove ``workdir``; a cluster that is already gone is success.

    Works without the binaries too (the processes are found from their pid files and
    command lines), so a cleared cache does not leave a cluster running.
    """
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    try:
        tools: Tools | None = Tools.locate(bin_dir, required=("kwokctl",))
    except SimClusterError as e:
        _log(f"{e.cause}; stopping the processes without kwokctl")
        tools = None
    existed = paths.workdir.exists()
    _teardown(paths, tools, remove_workdir=True)
    _log(f"cluster {name!r} is down; {paths.workdir} {'removed' if existed else 'was already absent'}")
    return {"name": name, "workdir": str(paths.workdir), "running": False}


def status(name: str, workdir: Path, bin_dir: Path | None = None) -> dict[str, Any]:
    """``{"name", "workdir", "running": bool, "pids": [...], "components": {name: state},
    "supervisor": pid|None, "down": record|None, "identity": recorded|None}`` plus
    ``apiServer`` and ``own`` when the API server is ready. ``running`` is true only when
    the API server is ready and the cluster is this work dir's own (its kube-system UID is the
    recorded one); ``why`` says what is wrong otherwise."""
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    pids = sorted(_cluster_pids(paths))
    down = supervise.down_record(paths.workdir)
    rec = recorded_identity(paths)
    result: dict[str, Any] = {
        "name": name,
        "workdir": str(paths.workdir),
        "running": False,
        "pids": pids,
        "components": supervise.states(paths.cluster_dir / "pids"),
        "supervisor": supervise.supervisor_pid(paths.workdir),
        "down": down,
        "identity": rec.to_json() if rec else None,
    }
    if down is not None:
        result["why"] = supervise.describe_down(down)
    if not pids or not paths.kubeconfig.exists():
        result.setdefault("why", "no process of the cluster runs" if paths.workdir.exists() else "no cluster")
        return result
    tools = Tools.locate(bin_dir, required=("kubectl",))
    if _api_ready(tools, paths):
        own, why = own_cluster(tools, paths)
        result["apiServer"] = _api_server_of(paths.kubeconfig.read_text(encoding="utf-8"))
        result["own"] = own
        result["running"] = own and down is None
        if not own:
            result["why"] = why
    else:
        stopped = [c for c, st in result["components"].items() if st.startswith("stopped")]
        result.setdefault(
            "why",
            "the API server is not ready" + (f"; stopped: {', '.join(stopped)}" if stopped else ""),
        )
    return result
