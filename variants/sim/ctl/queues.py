"""Kueue's controller as a process of the simulated lab (the queue layer, ``queues: true``).

The chart's controller Deployment would be a kwok Pod, which runs nothing, so the lab installs
the chart with ``controllerManager.replicas: 0`` (components/queues.py) and the sim runs the
same controller, ``cmd/kueue`` of sigs.k8s.io/kueue at the pinned tag (built from the Go module,
toolchain/sim/build.sh), as a local process against its API server, as it runs the control
plane's own components. Kueue's decisions (admission, quota, the Workloads' conditions) are
then real; only the Jobs' Pods are kwok's.

How the API server reaches it (the sim has no kube-proxy, so a Service's ClusterIP routes
nowhere):

* kube-apiserver runs with ``--enable-aggregator-routing`` (render.py), so a webhook's or an
  APIService's Service is resolved to an endpoint of its EndpointSlices;
* :func:`endpoint_slices` gives the chart's Services ``kueue-webhook-service`` and
  ``kueue-visibility-server`` one slice each, pointing at this host's address and the
  controller's ports. The address cannot be loopback: the API server refuses an EndpointSlice
  endpoint in 127.0.0.0/8 (``ValidateEndpointIP``, pkg/apis/core/validation, Kubernetes
  v1.36.3), so the controller's webhook and visibility servers listen on the host's address
  (:func:`host_address`, the one the API server itself would advertise), TLS only;
* the slices are ``managed-by`` the lab, so the EndpointSlice controller leaves them alone;
  they are labelled simulated;
* Kueue's own cert rotator (``internalCertManagement``, on by default) writes the serving
  certificate for ``kueue-webhook-service.kueue-system.svc`` into the chart's Secret and
  ``caBundle`` into the chart's webhook configurations and CRDs, as it does in a Pod. In a Pod
  the kubelet then mounts that Secret at the cert dir (the chart's manager.yaml, volume
  ``cert``), and the rotator waits for the file before it serves (``ensureCertsMounted``,
  github.com/open-policy-agent/cert-controller v0.16.0 pkg/rotator/rotator.go): the sim does
  the kubelet's part, copying the Secret's ``tls.crt``/``tls.key`` into the cert dir
  (:func:`_mount_secret`).

The configuration is the chart's (its ConfigMap ``kueue-manager-config``, read from the
cluster) with only what a process on a shared host needs changed (:func:`process_config`):
the ports are the lab's own (variants.sim.ctl.ports), the health probe listens on loopback,
the metrics endpoint is off (nothing scrapes it), no leader election (one instance).

Kueue's visibility API (``visibility.kueue.x-k8s.io``, feature gate ``VisibilityOnDemand``,
beta and on by default) is off in the sim: its server writes a self-signed certificate to
``/visibility`` (``certDir``, pkg/visibility/server.go at v0.19.0), a directory of the host's
root here, not of a Pod. The chart's two APIServices for it would then point at nothing and
fail every discovery of the API server (and the namespace controller's, which then stalls a
namespace's deletion), so :func:`start` deletes them (:data:`VISIBILITY_APISERVICES`); the
proof does not use that API.

The process's command line names the cluster's directory, so ``down`` stops it with the rest
(process._cluster_pids); it is not one of the supervised components, because ``stop`` ends it
while the cluster lives on (``pulumi destroy`` stops it before uninstalling the chart).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.config.queues import (
    CONFIG_KEY,
    CONFIGMAP,
    NAMESPACE,
    WEBHOOK_SECRET,
    WEBHOOK_SERVICE,
)
from gpulab.core import names
from variants.sim.ctl import ports as lab_ports
from variants.sim.ctl.process import (
    MARKER,
    REQUIRED_BINARIES,
    Paths,
    SimClusterError,
    Tools,
    _cmdline,
    _kubectl,
    _log,
    _pid_alive,
)
from variants.sim.ctl.render import validate_name

#: The lab's ports for the controller (reserved with the control plane's: variants.sim.ctl.ports).
PORT_OPTIONS: Final = ("kueueWebhookPort", "kueueHealthPort")
#: The feature gates the process runs with (module docstring).
FEATURE_GATES: Final = "VisibilityOnDemand=false"
#: The chart's APIServices of the visibility API (templates/visibility/apiservice_*.yaml).
VISIBILITY_APISERVICES: Final = ("v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io")
#: The controller's binary in the sim's bin dir (toolchain/sim/build.sh).
BINARY: Final = "kueue"
#: Who manages the slices (``endpointslice.kubernetes.io/managed-by``): not the controller's
#: ``endpointslice-controller.k8s.io``, so it never deletes or rewrites them.
MANAGED_BY: Final = "gpu-lab.sim"
#: The EndpointSlice's name.
SLICE: Final = f"{WEBHOOK_SERVICE}-sim"
#: Where the controller's files live, under the cluster's directory.
SUBDIR: Final = "kueue"


def host_address(advertise: str | None = None) -> str:
    """The address the controller listens on: ``advertise`` (the sim's
    ``--apiserver-advertise-address``), else the source address of this host's default route
    (what kube-apiserver advertises by default). No packet is sent.

    Raises:
        SimClusterError: no default route and no advertise address, or a loopback one.
    """
    address = advertise
    if not address:
        with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: a route lookup only
            address = s.getsockname()[0]
    if not address or address.startswith("127.") or address == "0.0.0.0":
        raise SimClusterError(
            "no non-loopback address for Kueue's webhooks: the API server refuses an EndpointSlice "
            "endpoint in 127.0.0.0/8",
            "give the sim an address with --apiserver-advertise-address (a host without a default route)",
        )
    return address


def process_config(chart_config: str, host: str, ports: Mapping[str, int], cert_dir: Path) -> str:
    """The chart's controller configuration (YAML of ``config.kueue.x-k8s.io/v1beta2``
    Configuration) with the process's addresses: webhook on ``host`` at the lab's port with
    ``cert_dir``, visibility server on ``host``, health probe on loopback, metrics off, no
    leader election; everything else as the chart says.

    Raises:
        ValueError: the chart's configuration is not a Configuration mapping.
    """
    doc = yaml.safe_load(chart_config)
    if not isinstance(doc, dict) or doc.get("kind") != "Configuration":
        raise ValueError("the chart's manager config is not a kueue Configuration")
    doc["namespace"] = NAMESPACE
    doc["webhook"] = {
        **(doc.get("webhook") or {}),
        "host": host,
        "port": ports["kueueWebhookPort"],
        "certDir": str(cert_dir),
    }
    doc["health"] = {
        **(doc.get("health") or {}),
        "healthProbeBindAddress": f"127.0.0.1:{ports['kueueHealthPort']}",
    }
    doc["metrics"] = {**(doc.get("metrics") or {}), "bindAddress": "0"}
    doc["leaderElection"] = {**(doc.get("leaderElection") or {}), "leaderElect": False}
    return yaml.safe_dump(doc, sort_keys=False)


def endpoint_slice(host: str, ports: Mapping[str, int]) -> dict[str, Any]:
    """The ``discovery.k8s.io/v1`` EndpointSlice of the chart's webhook Service, pointing at the
    controller on ``host``. Its port's name is the Service port's, which has none (``""``): the
    API server matches a slice's port by that name (``ResolveEndpoint``, k8s.io/apiserver
    pkg/util/proxy, v0.36.3) and skips a port whose name is unset."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": SLICE,
            "namespace": NAMESPACE,
            "labels": {
                "kubernetes.io/service-name": WEBHOOK_SERVICE,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
                names.SIMULATED_ANNOTATION: "true",
            },
            "annotations": {names.SIMULATED_ANNOTATION: "true"},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [host], "conditions": {"ready": True}}],
        "ports": [{"name": "", "port": ports["kueueWebhookPort"], "protocol": "TCP"}],
    }


def _dir(paths: Paths) -> Path:
    return paths.cluster_dir / SUBDIR


def _pid(paths: Paths) -> int | None:
    try:
        pid = int((_dir(paths) / "kueue.pid").read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) and str(_dir(paths)) in _cmdline(pid) else None


def _mount_secret(tools: Tools, paths: Paths, cert_dir: Path) -> bool:
    """Copy the webhook Secret's ``tls.crt`` and ``tls.key`` into ``cert_dir`` once the rotator
    has written them (the kubelet's Secret volume); True when the files are there."""
    proc = _kubectl(tools, paths, ["-n", NAMESPACE, "get", "secret", WEBHOOK_SECRET, "-o", "json"])
    if proc.returncode != 0:
        return False
    data = json.loads(proc.stdout).get("data") or {}
    if not data.get("tls.crt") or not data.get("tls.key"):
        return False
    for key in ("tls.key", "tls.crt"):  # the certificate last: the rotator waits for it
        target = cert_dir / key
        content = base64.b64decode(data[key])
        if not target.exists() or target.read_bytes() != content:
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(content)
            tmp.chmod(0o600)
            tmp.replace(target)
    return True


def _ready(port: int) -> bool:
    with (
        contextlib.suppress(OSError),
        urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r,
    ):
        return bool(r.status == 200)
    return False


def _tail(path: Path, lines: int = 12) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def start(
    paths: Paths, tools: Tools, ports: Mapping[str, int], advertise: str | None, timeout: float
) -> dict[str, Any]:
    """Start the controller (or keep the one running), publish its EndpointSlices and wait
    until the API server reaches its webhook (a server-side dry run of a ResourceFlavor, which
    Kueue's validating webhook answers). Returns ``{"pid", "binary", "webhook", "simulated"}``.

    Raises:
        SimClusterError: the chart's ConfigMap is missing, the process exits, or the webhook
            is not reached within ``timeout`` (the message carries its log's tail).
    """
    host = host_address(advertise)
    work = _dir(paths)
    (work / "certs").mkdir(parents=True, exist_ok=True)
    proc = _kubectl(tools, paths, ["-n", NAMESPACE, "get", "configmap", CONFIGMAP, "-o", "json"])
    if proc.returncode != 0:
        raise SimClusterError(
            f"Kueue's chart config {NAMESPACE}/{CONFIGMAP} not readable: {proc.stderr.strip()}",
            "install Kueue's chart first (the queue layer does: make lab)",
        )
    chart_config = json.loads(proc.stdout)["data"][CONFIG_KEY]
    config = work / "config.yaml"
    config.write_text(process_config(chart_config, host, ports, work / "certs"), encoding="utf-8")
    slice_file = work / "endpointslice.json"
    slice_file.write_text(json.dumps(endpoint_slice(host, ports)))
    applied = _kubectl(tools, paths, ["apply", "-f", str(slice_file)])
    if applied.returncode != 0:
        raise SimClusterError(
            f"Kueue's EndpointSlice refused: {applied.stderr.strip()}", "see the API server log"
        )
    _kubectl(tools, paths, ["delete", "apiservice", "--ignore-not-found", *VISIBILITY_APISERVICES])
    log = work / "kueue.log"
    pid = _pid(paths)
    if pid is None:
        env = {**os.environ, "KUBECONFIG": str(paths.kubeconfig), "TMPDIR": str(paths.workdir / "tmp")}
        with log.open("a") as out:
            child = subprocess.Popen(
                [tools.path(BINARY), f"--config={config}", f"--feature-gates={FEATURE_GATES}"],
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                env=env,
            )
        pid = child.pid
        (work / "kueue.pid").write_text(f"{pid}\n", encoding="utf-8")
        _log(
            f"Kueue's controller started as a process of the simulated lab (pid {pid}, "
            f"{host}:{ports['kueueWebhookPort']})"
        )
    deadline = time.monotonic() + timeout
    probe = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpulab-webhook-probe"},
    }
    probe_file = work / "probe.json"
    probe_file.write_text(json.dumps(probe))
    last = ""
    mounted = False
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            raise SimClusterError(f"Kueue's controller exited:\n{_tail(log)}", f"see {log}")
        mounted = mounted or _mount_secret(tools, paths, work / "certs")
        if mounted and _ready(ports["kueueHealthPort"]):
            dry = _kubectl(tools, paths, ["create", "--dry-run=server", "-f", str(probe_file)])
            if dry.returncode == 0:
                return {
                    "pid": pid,
                    "binary": tools.path(BINARY),
                    "webhook": f"{host}:{ports['kueueWebhookPort']}",
                    "simulated": True,
                }
            last = dry.stderr.strip()
        time.sleep(0.25 if not mounted else 1)
    raise SimClusterError(
        f"the API server did not reach Kueue's webhook within {timeout:.0f} s: "
        f"{last or 'controller not ready'}\n"
        f"{_tail(log)}",
        f"see {log}",
    )


def stop(paths: Paths, tools: Tools | None, grace: float = 10.0) -> dict[str, Any]:
    """Stop the controller and remove its EndpointSlices; succeeds when already gone."""
    pid = _pid(paths)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    if tools is not None and paths.kubeconfig.exists():
        _kubectl(tools, paths, ["-n", NAMESPACE, "delete", "endpointslice", "--ignore-not-found", SLICE])
    return {"stopped": pid}


def _lab_exists(workdir: str) -> bool:
    return (Path(workdir) / MARKER).exists()


def up(
    name: str, workdir: Path, bin_dir: Path | None, advertise: str | None, timeout: float
) -> dict[str, Any]:
    """``queues-up``: :func:`start` on the running cluster ``name`` with the lab's own ports
    for the controller (variants.sim.ctl.ports.extend).

    Raises:
        SimClusterError: the cluster is not there, ``kueue`` is not built, or :func:`start` fails.
    """
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    if not paths.kubeconfig.exists():
        raise SimClusterError(
            f"no simulated cluster {name!r} in {paths.workdir}", "make lab creates it first"
        )
    tools = Tools.locate(bin_dir, required=(*REQUIRED_BINARIES, BINARY))
    held = lab_ports.extend(paths.workdir, PORT_OPTIONS, _lab_exists)
    return {"name": name, **start(paths, tools, held, advertise, timeout)}


def down(name: str, workdir: Path, bin_dir: Path | None) -> dict[str, Any]:
    """``queues-down``: :func:`stop`; success when the controller or the cluster is gone."""
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    try:
        tools: Tools | None = Tools.locate(bin_dir, required=("kubectl",))
    except SimClusterError:
        tools = None
    return {"name": name, **stop(paths, tools)}
