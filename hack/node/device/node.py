#!/usr/bin/env python3
"""The real-node harness on the lent GPU machine: one Kubernetes node, the lab's checks, a negative.

Workplace only (hack/node; README.md there). Run as root on the GPU machine from the
staged folder (``bash .devwork/node/run.sh``): it unpacks the carried binaries, starts a
one-node cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd
with runc and CDI, the CNI bridge without masquerading, a real kubelet), builds the images
from this machine's files, runs the project's device plugin as a DaemonSet, then the lab's
own cluster-side checks exactly as the program renders them (``rendered.json``): the gate,
the smoke Pod and its check, the compute Pod and its check; then the negative (the plugin
reports the GPU unhealthy: the gate must fail fast with the diagnosis); then it stops
everything and checks that nothing is left. Every command, its exit code, its time and its
output go under ``$OUT/work``; ``summary.json`` says what passed.

Stdlib only, plus the kubernetes client from the carried site (``site.tar.xz``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import time
import traceback
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = Path(os.environ.get("OUT") or "/tmp/gpulab-node-out")
WORK = OUT / "work"
OPT = Path("/opt/gpulab-node")
BIN = OPT / "bin"
CNI_BIN = OPT / "cni"
STATE = Path("/var/lib/gpulab-node")
RUN = Path("/run/gpulab-node")
CDI_DIR = Path("/var/run/cdi")
CDI_SPEC = CDI_DIR / "nvidia.json"
FAULTS = RUN / "faults"
FAULT_FILE = FAULTS / "unhealthy"
PKI = HERE / "pki"
NODE = "gpulab-h200"
#: The cluster's addresses (:func:`use_in_cluster_network` changes them for the modes whose Pods
#: talk to the API server).
NET: dict[str, Any] = {
    "api_port": 6443,
    "service_cidr": "10.96.0.0/16",
    "cluster_dns": "10.96.0.10",
    "pod_range_start": None,
}
#: Pods reach the API server in-cluster (client-go's in-cluster config: KUBERNETES_SERVICE_HOST
#: and _PORT, the ``kubernetes`` Service's ClusterIP, the service range's first address, and
#: 443). No kube-proxy runs here (the machine has no iptables), so nothing translates a
#: ClusterIP: the service range starts at the CNI bridge's gateway 10.88.0.1, the host's own
#: address on cni0 (in the API server's certificate), and the API server listens on 443, so
#: the Service's address and port are the API server's own; Pod addresses start past that /24.
IN_CLUSTER_NET: dict[str, Any] = {
    "api_port": 443,
    "service_cidr": "10.88.0.0/24",
    "cluster_dns": "10.88.0.10",
    "pod_range_start": "10.88.1.1",
}
CONTAINERD_SOCK = RUN / "containerd" / "containerd.sock"
CNI_CONF_DIR = RUN / "cni" / "net.d"
PLUGIN_NS, PLUGIN_DS = "kube-system", "gpulab-device-plugin"
PLUGIN_LABELS = {
    "app.kubernetes.io/name": PLUGIN_DS,
    # The DaemonSet's selector: a mode may relabel app.kubernetes.io/name (FLEET_PLUGIN_LABELS).
    "app.kubernetes.io/instance": PLUGIN_DS,
    "app.kubernetes.io/component": "device-plugin",
    "app.kubernetes.io/part-of": "gpu-lab-node-harness",
}
# A lab that finds the device plugin by its labels may look for others: add them here
# (JSON object in $GPULAB_NODE_PLUGIN_LABELS), on the DaemonSet and its pods.
PLUGIN_LABELS.update(json.loads(os.environ.get("GPULAB_NODE_PLUGIN_LABELS") or "{}"))
#: The fleet mode (``gpuStack: found``): the lab finds a device plugin by its Pods' labels
#: (gpulab.kube.fleet DEVICE_PLUGIN_SELECTORS: the device plugin chart's
#: ``app.kubernetes.io/name=nvidia-device-plugin``), so the harness's plugin wears that label;
#: its name, image and binary stay the harness's own (``devicePluginFound`` names it).
FLEET_PLUGIN_LABELS = {"app.kubernetes.io/name": "nvidia-device-plugin"}
#: The node's pool label in the fleet mode (hack/node/render.py POOL_LABEL, POOL), set by
#: the kubelet (--node-labels) as a node pool's nodes get theirs.
FLEET_NODE_LABELS = {"gpulab.dev/node-pool": "h200"}
IMAGES = {
    "pause": "gpulab.local/gpulab-pause:1",
    "plugin": "gpulab.local/gpulab-device-plugin:1",
    "smoke": "gpulab.local/node-smoke:1",
    "compute": "gpulab.local/vectoradd:1",
}
#: NVIDIA's device plugin stack (``run.sh lab-nvidia``): its binaries and chart, unpacked by the
#: call before (``bash .devwork/nvidia/unpack.sh``; hack/node/stage-nvidia.sh), with VERSIONS.
NVIDIA_OPT = Path("/opt/gpulab-nvidia")
NVIDIA_DP_BINARIES = ("nvidia-device-plugin", "gpu-feature-discovery", "config-manager", "mps-control-daemon")
NFD_BINARIES = ("nfd-master", "nfd-worker", "nfd-gc")
#: NVIDIA's runtime in its cdi mode (the legacy mode needs libnvidia-container, which is C and
#: not built here): its config where the toolkit reads it, and containerd's drop-in with the
#: runtime that ``nvidia-ctk runtime configure`` writes.
NVIDIA_RUNTIME_CONFIG = Path("/etc/nvidia-container-runtime/config.toml")
CONTAINERD_DROP_IN = RUN / "containerd" / "conf.d" / "99-nvidia.toml"
RUNTIME_CLASS = "nvidia"
#: The lab's release of NVIDIA's chart (components/device_plugin.py) and where GFD writes.
DP_RELEASE = DP_NAMESPACE = "nvidia-device-plugin"
FEATURES_D = Path("/etc/kubernetes/node-feature-discovery/features.d")
#: The negative of ``lab-nvidia``: a NoExecute taint the chart's Pods do not tolerate (they
#: tolerate CriticalAddonsOnly and nvidia.com/gpu only).
EVICT_TAINT = {"key": "gpulab.dev/negative", "value": "evict-device-plugin", "effect": "NoExecute"}


#: NVIDIA's DRA driver (``run.sh lab-dra``): its binaries, chart and image files, unpacked by the
#: call before (``bash .devwork/dra/unpack.sh``; hack/node/stage-dra.sh), with VERSIONS.
DRA_OPT = Path("/opt/gpulab-dra")
DRA_BINARIES = ("gpu-kubelet-plugin", "nvidia-cdi-hook")
#: The lab's release of NVIDIA's DRA driver chart and its namespace (gpulab/config/dra.py), the
#: driver (cmd/gpu-kubelet-plugin/main.go DriverName) and its CDI vendor (cdi.go cdiVendor).
DRA_RELEASE = DRA_NAMESPACE = "dra-driver-nvidia-gpu"
DRA_DRIVER = "gpu.nvidia.com"
DRA_CDI_VENDOR = "k8s.gpu.nvidia.com"
#: Where the kubelet serves plugins (its root dir's plugins_registry and plugins: the chart's
#: kubeletRegistrarDirectoryPath and kubeletPluginsDirectoryPath defaults).
KUBELET_DIR = Path("/var/lib/kubelet")
KUBELET_PLUGIN_DIRS = (KUBELET_DIR / "plugins_registry", KUBELET_DIR / "plugins")
#: The label of a GPU node, set by the kubelet in the DRA modes (--node-labels): what NVIDIA's GPU
#: Operator puts on one and NFD/GFD do not here (neither runs in this mode); the chart's
#: kubelet-plugin DaemonSet schedules by it (values.yaml kubeletPlugin.affinity) and the lab's
#: dra-gate finds GPU nodes by it (gpulab.kube.dra GPU_NODE_LABEL).
DRA_NODE_LABELS = {"nvidia.com/gpu.present": "true"}
#: Mount points the harness made rshared from private (:func:`shared_mount`), one a line: made
#: rprivate again by teardown and by the next run's clean start.
SHARED_BINDS = Path("/run/gpulab-node.binds")
#: What the DRA driver's kubelet plugin was given (its driver root) and what the run found.
DRA: dict[str, Any] = {}


def stack_versions(opt: Path = NVIDIA_OPT) -> dict[str, str]:
    """The VERSIONS of an unpacked stack (NVIDIA's device plugin stack: NVIDIA_DEVICE_PLUGIN_VERSION
    and NFD_VERSION; the DRA driver's: DRA_DRIVER_VERSION and NVIDIA_CDI_HOOK_VERSION)."""
    text = _read(str(opt / "VERSIONS"))
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)


def nvidia_versions() -> dict[str, str]:
    """NVIDIA_DEVICE_PLUGIN_VERSION and NFD_VERSION of the unpacked stack (its VERSIONS)."""
    return stack_versions(NVIDIA_OPT)


def nvidia_images() -> dict[str, str]:
    """The images of NVIDIA's stack, named as the lab's stack config names them."""
    v = nvidia_versions()
    return {
        "nvidia-dp": f"gpulab.local/k8s-device-plugin:v{v.get('NVIDIA_DEVICE_PLUGIN_VERSION', '0.19.0')}",
        "nfd": f"gpulab.local/node-feature-discovery:v{v.get('NFD_VERSION', '0.17.3')}",
    }


#: Where the lab's compute command runs the sample (gpulab.core.names VECTORADD_BINARY: the
#: path in NVIDIA's cuda-sample image); the compute image holds the project's vector add there.
VECTORADD_PATH = "/cuda-samples/vectorAdd"
T0 = time.monotonic()
#: Seconds the whole run may take before its steps are cut short so that teardown and the
#: results still fit the device call (its limit is 600 s; the machine's start is not in it).
BUDGET = float(os.environ.get("GPULAB_NODE_BUDGET", "420"))
#: What teardown and packing the results need at the end.
RESERVE = 40.0
#: What ``scripts/lab destroy`` and the census need in ``lab-nvidia`` (a destroy took 14-30 s).
DESTROY_RESERVE = 90.0
REQUIRED_BINARIES = (
    "gpulab-kube", "etcd", "gpulab-containerd", "containerd-shim-runc-v2", "runc", "nvidia-ctk",
    "bridge", "host-local", "loopback", "gpulab-device-plugin", "gpulab-pause", "gpulab-vectoradd",
    "nvidia-container-runtime",
)  # fmt: skip


def now() -> float:
    """Seconds since the harness started."""
    return round(time.monotonic() - T0, 3)


def budget(timeout: float) -> float:
    """``timeout`` cut to what is left of the run's budget (less the teardown's reserve).

    Raises:
        TimeoutError: nothing is left.
    """
    left = BUDGET - RESERVE - (time.monotonic() - T0)
    if left <= 1:
        raise TimeoutError(f"the run's budget of {BUDGET:.0f}s is spent; stopping for teardown")
    return min(timeout, left)


def say(msg: str) -> None:
    """One progress line on stdout (the device tool's output tail) and in harness.log."""
    line = f"[{now():7.1f}s] {msg}"
    print(line, flush=True)
    with (WORK / "harness.log").open("a") as f:
        f.write(line + "\n")


class Record:
    """What the run saw: steps (name, start, seconds, ok, error) and every command (argv,
    rc, seconds, where its output went), written to ``steps.json`` / ``commands.jsonl`` as
    they happen so a run cut short still leaves them."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.facts: dict[str, Any] = {}

    def save(self) -> None:
        (WORK / "steps.json").write_text(json.dumps(self.steps, indent=1))
        (WORK / "facts.json").write_text(json.dumps(self.facts, indent=1, default=str))

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        entry: dict[str, Any] = {"step": name, "start": now()}
        self.steps.append(entry)
        say(f"== {name}")
        try:
            yield entry
            entry["ok"] = True
        except BaseException as exc:
            entry["ok"] = False
            entry["error"] = f"{type(exc).__name__}: {exc}"
            (WORK / f"error-{name}.txt").write_text(traceback.format_exc())
            say(f"!! {name} failed: {entry['error']}")
            raise
        finally:
            entry["seconds"] = round(now() - entry["start"], 3)
            self.save()


REC = Record()


def sh(
    argv: Sequence[str],
    *,
    timeout: float = 60,
    check: bool = True,
    name: str | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` (no shell), record it in commands.jsonl and its output in
    ``cmd-<name>.out`` when ``name`` is given; raise on a non-zero exit when ``check``."""
    t = now()
    try:
        p = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
            input=stdin,
            check=False,
            cwd=cwd,
        )
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc = 124
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = (exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")) + "\n[timed out]"
        p = subprocess.CompletedProcess(list(argv), rc, out, err)
    except FileNotFoundError as exc:
        rc, out, err = 127, "", str(exc)
        p = subprocess.CompletedProcess(list(argv), rc, out, err)
    entry = {"argv": list(argv), "rc": rc, "start": t, "seconds": round(now() - t, 3), "name": name}
    with (WORK / "commands.jsonl").open("a") as f:
        f.write(json.dumps(entry) + "\n")
    if name:
        (WORK / f"cmd-{name}.out").write_text(f"$ {shlex.join(argv)}\n# rc={rc}\n{out}\n# stderr:\n{err}")
    if check and rc != 0:
        raise RuntimeError(f"{shlex.join(argv)} exited {rc}: {(err or out).strip()[-800:]}")
    return p


PROCS: list[tuple[str, subprocess.Popen[bytes]]] = []


def start(name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start a daemon with its output in ``<name>.log``; stopped in reverse order at the end."""
    log = (WORK / f"{name}.log").open("wb")
    with (WORK / "commands.jsonl").open("a") as f:
        f.write(json.dumps({"argv": list(argv), "daemon": name, "start": now()}) + "\n")
    p = subprocess.Popen(
        list(argv),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    PROCS.append((name, p))
    return p


def wait_for(what: str, check: Callable[[], Any], timeout: float, interval: float = 0.25) -> Any:
    """The first truthy ``check()`` within ``timeout`` seconds, or TimeoutError naming ``what``
    and the last exception ``check`` raised."""
    timeout = budget(timeout)
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    t = now()
    while True:
        for name, p in PROCS:
            if p.poll() is not None:
                raise RuntimeError(f"{name} exited ({p.returncode}) while waiting for {what}; see {name}.log")
        try:
            value = check()
            if value:
                say(f"   {what}: after {now() - t:.1f}s")
                return value
        except Exception as exc:
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s (last error: {last})")
        time.sleep(interval)


# ---------------------------------------------------------------- the machine


#: Kernel settings the kubelet changes (its kernel tunables) or the bridge plugin (forwarding):
#: saved first and, in a rehearsal on a shared machine, put back at the end.
SYSCTLS = (
    "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
)  # fmt: skip


def clean_start() -> None:
    """Nothing of an earlier run left: its processes, mounts and state (a warm machine, or an
    interrupted run, keeps them)."""
    for pid, exe in own_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            say(f"   killed {exe} ({pid}) left by an earlier run")
    for m in sorted(our_mounts(), key=len, reverse=True):
        sh(["umount", "-l", m], check=False)
    unbind_shared()
    for d in (STATE, RUN, KUBELET_DIR, Path("/var/lib/cni/networks/gpulab"), CDI_SPEC,
              NVIDIA_RUNTIME_CONFIG, FEATURES_D / "gfd", *map(Path, driver_cdi_specs())):  # fmt: skip
        if d.is_dir():
            shutil.rmtree(d, ignore_errors=True)
        elif d.exists():
            d.unlink()
    REC.facts["sysctlsBefore"] = {k: _read(f"/proc/sys/{k}").strip() for k in SYSCTLS}


def restore_sysctls() -> None:
    for k, v in (REC.facts.get("sysctlsBefore") or {}).items():
        with contextlib.suppress(OSError):
            Path(f"/proc/sys/{k}").write_text(v)


def machine_facts() -> None:
    """What the machine has: kernel, cgroups, interfaces, the driver's libraries, tools."""
    f = REC.facts
    f["uname"] = list(os.uname())
    f["osRelease"] = _read("/etc/os-release")
    f["cgroupControllers"] = _read("/sys/fs/cgroup/cgroup.controllers")
    f["cgroupSubtreeControl"] = _read("/sys/fs/cgroup/cgroup.subtree_control")
    f["selfCgroup"] = _read("/proc/self/cgroup")
    f["netDev"] = [ln.split(":")[0].strip() for ln in _read("/proc/net/dev").splitlines()[2:]]
    f["ipv4"] = ipv4_addresses()
    f["routes"] = _read("/proc/net/route")
    f["resolvConf"] = _read("/etc/resolv.conf")
    f["tools"] = {
        t: shutil.which(t)
        for t in (
            "xz",
            "openssl",
            "unshare",
            "ldconfig",
            "mount",
            "umount",
            "ip",
            "iptables",
            "nvidia-smi",
            "ldd",
            "nvcc",
        )
    }
    f["python"] = sys.version
    ld = sh(["ldconfig", "-p"], check=False).stdout
    f["driverLibraries"] = [ln.strip() for ln in ld.splitlines() if "nvidia" in ln or "libcuda" in ln]
    f["filesystems"] = _read("/proc/filesystems")
    f["memInfo"] = _read("/proc/meminfo").splitlines()[:3]
    sh(["nvidia-smi"], name="host-nvidia-smi", check=False)
    sh(["nvidia-smi", "-L"], name="host-nvidia-smi-L", check=False)
    sh(
        [
            "nvidia-smi",
            "--query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id",
            "--format=csv,noheader,nounits",
        ],
        name="host-query-gpu",
        check=False,
    )


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        return f"<{exc}>"


def ipv4_addresses() -> dict[str, str]:
    """Interface -> IPv4 address (SIOCGIFADDR), for the interfaces that have one."""
    import fcntl
    import struct

    out: dict[str, str] = {}
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for name in os.listdir("/sys/class/net"):
        try:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name[:15].encode()))
            out[name] = socket.inet_ntoa(packed[20:24])
        except OSError:
            continue
    s.close()
    return out


def lib_path(soname: str) -> str:
    """Where ``ldconfig -p`` says ``soname`` is (x86-64)."""
    for ln in sh(["ldconfig", "-p"]).stdout.splitlines():
        m = re.match(rf"\s*{re.escape(soname)} \(libc6,x86-64[^)]*\) => (\S+)", ln)
        if m:
            return m.group(1)
    raise RuntimeError(
        f"ldconfig -p lists no {soname}: the NVIDIA driver's libraries are not in the ld cache"
    )


def unpack() -> None:
    """The carried binaries, xz-decompressed into /opt/gpulab-node, with the names each
    multi-call binary dispatches on; their versions."""
    BIN.mkdir(parents=True, exist_ok=True)
    CNI_BIN.mkdir(parents=True, exist_ok=True)
    for archive in sorted((HERE / "bin").glob("*.tar.xz")):
        with tarfile.open(archive, "r:xz") as t:
            for m in t.getmembers():
                if not m.isfile():
                    continue
                dest = (CNI_BIN if m.name in ("bridge", "host-local", "loopback") else BIN) / Path(
                    m.name
                ).name
                with t.extractfile(m) as src, open(dest, "wb") as dst:  # type: ignore[union-attr]
                    shutil.copyfileobj(src, dst, 1 << 20)
                dest.chmod(0o755)
    missing = [n for n in REQUIRED_BINARIES if not (BIN / n).exists() and not (CNI_BIN / n).exists()]
    if missing:
        raise RuntimeError(f"not carried: {missing}")
    for n in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        _link(BIN / "gpulab-kube", BIN / n)
    for n in ("containerd", "ctr"):
        _link(BIN / "gpulab-containerd", BIN / n)
    versions = {}
    for argv in (
        [BIN / "kube-apiserver", "--version"],
        [BIN / "kubelet", "--version"],
        [BIN / "etcd", "--version"],
        [BIN / "containerd", "--version"],
        [BIN / "runc", "--version"],
        [BIN / "nvidia-ctk", "--version"],
        [CNI_BIN / "bridge"],
        [BIN / "gpulab-pause", "-v"],
    ):
        p = sh([str(a) for a in argv], check=False, timeout=20)
        versions[Path(str(argv[0])).name] = (p.stdout + p.stderr).strip()
    REC.facts["versions"] = versions


def unpack_stack(
    opt: Path, binaries: Sequence[str], chart: str, stage: str, argvs: Sequence[Sequence[Any]]
) -> dict[str, Any]:
    """A stack as the call before unpacked it (``opt``: bin/, the chart, VERSIONS), or
    RuntimeError naming the call to make (``stage``: .devwork/<stage>); its VERSIONS and what
    each of ``argvs`` (a binary's version) printed."""
    missing = [n for n in binaries if not (opt / "bin" / n).is_file()]
    if missing or not (opt / chart / "Chart.yaml").is_file():
        raise RuntimeError(
            f"the stack is not unpacked in {opt} (missing {missing or 'the chart'}): run "
            f"`bash .devwork/{stage}/unpack.sh` first (hack/node/stage-{stage}.sh)"
        )
    versions: dict[str, Any] = {"VERSIONS": stack_versions(opt)}
    for argv in argvs:
        p = sh([str(a) for a in argv], check=False, timeout=20)
        versions[Path(str(argv[0])).name] = (p.stdout + p.stderr).strip()[-400:]
    return versions


def unpack_nvidia() -> None:
    """NVIDIA's device plugin stack (/opt/gpulab-nvidia); the binaries' own versions."""
    nbin = NVIDIA_OPT / "bin"
    REC.facts["nvidiaVersions"] = unpack_stack(
        NVIDIA_OPT, (*NVIDIA_DP_BINARIES, *NFD_BINARIES), DP_RELEASE, "nvidia",
        [
            [BIN / "nvidia-container-runtime", "--version"],
            [nbin / "nvidia-device-plugin", "--version"],
            [nbin / "gpu-feature-discovery", "--version"],
            [nbin / "config-manager", "--version"],
            [nbin / "nfd-worker", "-version"],
            [nbin / "nfd-master", "-version"],
        ],
    )  # fmt: skip


def unpack_dra() -> None:
    """NVIDIA's DRA driver (/opt/gpulab-dra); the binaries' own versions."""
    dbin = DRA_OPT / "bin"
    REC.facts["draVersions"] = unpack_stack(
        DRA_OPT, DRA_BINARIES, DRA_RELEASE, "dra",
        [[dbin / "gpu-kubelet-plugin", "--version"], [dbin / "nvidia-cdi-hook", "--version"]],
    )  # fmt: skip


def _link(target: Path, link: Path) -> None:
    link.unlink(missing_ok=True)
    link.symlink_to(target.name)


def python_site() -> None:
    """The kubernetes client and its dependencies (site.tar.xz, built for Python 3.12), and the
    lab's own package (lab/) first on sys.path."""
    if os.environ.get("GPULAB_NODE_SITE") == "none":  # a rehearsal with its own venv's client
        os.environ["PYTHONPATH"] = str(HERE / "lab")
        sys.path.insert(0, str(HERE / "lab"))
        return
    site = Path("/tmp/gpulab-site")
    if not site.exists():
        with tarfile.open(HERE / "site.tar.xz") as t:
            t.extractall(site, filter="data")
    for p in (str(HERE / "lab"), str(site)):
        if p not in sys.path:
            sys.path.insert(0, p)
    os.environ["PYTHONPATH"] = f"{HERE / 'lab'}:{site}"


def cgroups() -> None:
    """cgroup v2 with the controllers the kubelet needs enabled for child cgroups."""
    want = {"cpuset", "cpu", "io", "memory", "pids", "hugetlb"}
    have = set(_read("/sys/fs/cgroup/cgroup.controllers").split())
    missing = {"cpuset", "cpu", "memory", "pids"} - have
    if missing:
        raise RuntimeError(f"cgroup v2 root lacks controllers {sorted(missing)} (have {sorted(have)})")
    enabled = set(_read("/sys/fs/cgroup/cgroup.subtree_control").split())
    for c in sorted((want & have) - enabled):
        try:
            Path("/sys/fs/cgroup/cgroup.subtree_control").write_text(f"+{c}")
        except OSError as exc:
            say(f"   cannot enable +{c} in the root's subtree_control: {exc}")
    REC.facts["cgroupSubtreeControlAfter"] = _read("/sys/fs/cgroup/cgroup.subtree_control")


def cdi() -> None:
    """The CDI spec of the driver: ``nvidia-ctk cdi generate`` (its hooks through nvidia-ctk
    itself), then ``nvidia-ctk cdi list``."""
    CDI_DIR.mkdir(parents=True, exist_ok=True)
    sh(
        [
            str(BIN / "nvidia-ctk"),
            "cdi",
            "generate",
            "--format=json",
            f"--output={CDI_SPEC}",
            f"--nvidia-cdi-hook-path={BIN / 'nvidia-ctk'}",
            # v1.20.2's default, said out loud: the names NVIDIA's runtime maps
            # NVIDIA_VISIBLE_DEVICES=<index>/<uuid> to (nvidia.com/gpu=<...>; "all" always).
            "--device-name-strategy=index",
            "--device-name-strategy=uuid",
        ],
        name="cdi-generate",
        timeout=60,
    )
    sh([str(BIN / "nvidia-ctk"), "cdi", "list", f"--spec-dir={CDI_DIR}"], name="cdi-list", check=False)
    shutil.copy(CDI_SPEC, WORK / "cdi-nvidia.json")
    REC.facts["cdiDeviceNames"] = cdi_device_names()


def cdi_device_names() -> list[str]:
    """The fully qualified device names of the harness's CDI spec."""
    spec = json.loads(CDI_SPEC.read_text())
    return [f"{spec['kind']}={d['name']}" for d in spec.get("devices", [])]


#: Where NVIDIA's DRA driver looks for nvidia-smi and libnvidia-ml.so.1 under its driver root
#: (cmd/gpu-kubelet-plugin/root.go; its init container's hack/kubelet-plugin-prestart.sh the same),
#: x86-64's: the root itself first.
DRA_SMI_DIRS = ("", "opt/bin", "usr/bin", "usr/sbin", "bin", "sbin")
DRA_NVML_DIRS = ("", "usr/lib64", "usr/lib/x86_64-linux-gnu", "lib64", "lib/x86_64-linux-gnu")


def dra_driver_root(gpu_host: bool) -> str:
    """The chart's ``nvidiaDriverRoot`` (the lab's ``draDriverRoot``) for this machine: the first
    of ``/`` and the directories above nvidia-smi under which the driver looks as it does
    (:data:`DRA_SMI_DIRS`, :data:`DRA_NVML_DIRS`) finds both. On the lent H200 the driver is
    under /usr/local/nvidia (bin/nvidia-smi, lib64/libnvidia-ml.so.1): ``/`` would not do. Without
    a GPU, :func:`fake_driver_root`."""
    if not gpu_host:
        return without_dev(Path(fake_driver_root()))
    smi = Path(shutil.which("nvidia-smi") or "/usr/bin/nvidia-smi")
    for root in (Path("/"), smi.parent.parent, smi.parent.parent.parent):
        if any((root / d / "nvidia-smi").is_file() for d in DRA_SMI_DIRS) and any(
            (root / d / "libnvidia-ml.so.1").is_file() for d in DRA_NVML_DIRS
        ):
            return without_dev(root)
    raise RuntimeError(
        f"no driver root holds both nvidia-smi ({smi}) and libnvidia-ml.so.1 as the DRA driver looks"
    )


def without_dev(root: Path) -> str:
    """``root``, or where it has a ``dev`` folder (the H200's /usr/local/nvidia has one, without
    the GPU's device nodes), a root of the harness's that binds every entry of it but ``dev``.
    The kubelet plugin takes any driver root with a ``dev`` folder as the root of the device
    nodes too (v0.5.0 cmd/gpu-kubelet-plugin/root.go ``isDevRoot``/``getDevRoot``), finds no
    /dev/nvidia0 there and writes a claim's CDI device with no edits, which the CDI library
    refuses ("invalid device, empty device edits": the 2026-12-03 20:09 run); without it the
    device root is ``/``, the host's /dev in the privileged plugin container."""
    if str(root) == "/" or not (root / "dev").is_dir():
        return str(root)
    synth = RUN / "driver-root"
    synth.mkdir(parents=True, exist_ok=True)
    for entry in sorted(root.iterdir()):
        if entry.name == "dev":
            continue
        dest = synth / entry.name
        if entry.is_symlink():
            if not dest.is_symlink():
                dest.symlink_to(os.readlink(entry))
            continue
        if entry.is_dir():
            dest.mkdir(exist_ok=True)
        else:
            dest.touch(exist_ok=True)
        if not os.path.ismount(dest):
            sh(["mount", "--rbind", str(entry), str(dest)], name=f"bind-driver-root-{entry.name}")
    return str(synth)


def fake_driver_root() -> str:
    """The rehearsal's stand-in driver root: an nvidia-smi that answers ``--version`` (the chart's
    init container runs it and waits until it exits 0) and a libnvidia-ml.so.1 that is not NVML,
    so that the kubelet plugin itself starts and fails on NVML as it would without a GPU; a
    private mount of its own, as the H200's driver root is."""
    root = RUN / "fake-driver" / "nvidia"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "lib64").mkdir(parents=True, exist_ok=True)
    smi = root / "bin" / "nvidia-smi"
    smi.write_text("#!/bin/bash\necho 'NVIDIA-SMI version : gpu-lab rehearsal stand-in (no GPU)'\n")
    smi.chmod(0o755)
    (root / "lib64" / "libnvidia-ml.so.1").write_text("gpu-lab rehearsal stand-in: not NVML\n")
    (root / "dev").mkdir(exist_ok=True)  # as the H200's driver root has one (without_dev)
    # A mount of its own, private, as the lent H200's /usr/local/nvidia is (teardown unmounts it:
    # it is under RUN).
    if not os.path.ismount(root):
        sh(["mount", "--bind", str(root), str(root)], name="bind-fake-driver")
        sh(["mount", "--make-private", str(root)], name="private-fake-driver")
    return str(root)


def mount_of(path: Path) -> dict[str, str]:
    """The mount ``path`` is on (/proc/self/mountinfo: the longest mount point above it, the
    last listed of equals): its mount point and optional fields (``shared:N``, ``master:N``)."""
    best = {"mountPoint": "", "optional": ""}
    for ln in _read("/proc/self/mountinfo").splitlines():
        f = ln.split()
        mp, opt = f[4], " ".join(f[6 : f.index("-")])
        if (str(path) == mp or str(path).startswith(mp.rstrip("/") + "/")) and len(mp) >= len(
            best["mountPoint"]
        ):
            best = {"mountPoint": mp, "optional": opt}
    return best


def shared_mount(path: Path) -> dict[str, Any]:
    """``path`` on a shared mount: containerd refuses a Bidirectional volume whose source is not
    on one and a HostToContainer volume not on a shared or slave one (internal/cri/opts/
    spec_linux_opts.go ensureShared, ensureSharedOrSlave); the DRA chart's kubelet plugin mounts
    the kubelet's plugins directory Bidirectional and the driver root HostToContainer. Unless it
    is already, the mount ``path`` is on is made rshared in place (``mount --make-rshared``, as
    kind's node image and systemd make /), every mount below it too: no bind, since a bind leaves
    the mount it copies listed under the same path, still private, and containerd's lookup found
    that one on the H200 (``/usr/local/nvidia``, the driver's own mount, 2026-12-03). A mount point
    made rshared from private is recorded in :data:`SHARED_BINDS` for teardown to make rprivate
    again. Returns the mount before and after."""
    path.mkdir(parents=True, exist_ok=True)
    before = mount_of(path)
    if "shared:" not in before["optional"]:
        sh(["mount", "--make-rshared", before["mountPoint"]], name=f"rshared-{path.name}")
        if not before["optional"]:
            with SHARED_BINDS.open("a") as f:
                f.write(f"{before['mountPoint']}\n")
    return {"path": str(path), "before": before, "after": mount_of(path)}


def unbind_shared() -> list[str]:
    """Undo :func:`shared_mount`: each mount point it made rshared from private made rprivate
    again (the last first); returns those mount points."""
    if not SHARED_BINDS.exists():
        return []
    done = []
    for p in reversed(SHARED_BINDS.read_text().split()):
        if os.path.ismount(p):
            sh(["mount", "--make-rprivate", p], check=False)
            done.append(p)
    SHARED_BINDS.unlink()
    return done


def node_ip() -> str:
    """The node's InternalIP: a non-loopback IPv4 address, else the CNI bridge's gateway made
    up front (the bridge plugin, run once for a throwaway network namespace, creates cni0 with
    10.88.0.1: the kubelet refuses a loopback node IP)."""
    addrs = {k: v for k, v in ipv4_addresses().items() if not v.startswith("127.")}
    if addrs and os.environ.get("GPULAB_NODE_NETWORK") != "bridge":
        return sorted(addrs.items())[0][1]
    say("   no non-loopback IPv4 address: creating cni0 through the bridge plugin")
    holder = subprocess.Popen(["unshare", "--net", "sleep", "600"], start_new_session=True)
    PROCS.append(("netns-holder", holder))
    time.sleep(0.3)
    conf = json.loads(cni_conflist())["plugins"][0]
    conf.update({"cniVersion": "1.0.0", "name": "gpulab"})
    env = {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "gpulab-bootstrap",
        "CNI_NETNS": f"/proc/{holder.pid}/ns/net",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": str(CNI_BIN),
    }
    sh([str(CNI_BIN / "bridge")], env=env, stdin=json.dumps(conf), name="cni-bootstrap")
    sh([str(CNI_BIN / "bridge")], env={**env, "CNI_COMMAND": "DEL"}, stdin=json.dumps(conf), check=False)
    holder.kill()
    holder.wait()
    PROCS.remove(("netns-holder", holder))
    ip = ipv4_addresses().get("cni0")
    if not ip:
        raise RuntimeError("the bridge plugin made no cni0 address")
    return ip


def cni_conflist() -> str:
    """The pod network: CNI bridge cni0 with host-local IPAM, no IP masquerade (it would call
    iptables, which this machine lacks); containerd adds the loopback plugin itself."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "gpulab",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": "cni0",
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[pod_range()]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                }
            ],
        },
        indent=1,
    )


def api_url() -> str:
    return f"https://127.0.0.1:{NET['api_port']}"


def use_in_cluster_network() -> None:
    """The addresses of :data:`IN_CLUSTER_NET` (NVIDIA's chart: config-manager, GFD and NFD use
    in-cluster config)."""
    NET.update(IN_CLUSTER_NET)


def pod_range() -> dict[str, str]:
    """host-local's range: 10.88.0.0/16, gateway 10.88.0.1 (cni0), the Pods' addresses from
    ``pod_range_start`` when the service range takes the first /24."""
    r = {"subnet": "10.88.0.0/16"}
    if NET["pod_range_start"]:
        r.update({"rangeStart": NET["pod_range_start"], "gateway": "10.88.0.1"})
    return r


def kubeconfig(user: str, server: str | None = None) -> str:
    """A kubeconfig for ``user`` (pki/<user>.crt/.key), everything embedded."""

    def b64(name: str) -> str:
        return base64.b64encode((PKI / name).read_bytes()).decode()

    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "gpulab",
                    "cluster": {"server": server or api_url(), "certificate-authority-data": b64("ca.crt")},
                }
            ],
            "users": [
                {
                    "name": user,
                    "user": {
                        "client-certificate-data": b64(f"{user}.crt"),
                        "client-key-data": b64(f"{user}.key"),
                    },
                }
            ],
            "contexts": [{"name": "gpulab", "context": {"cluster": "gpulab", "user": user}}],
            "current-context": "gpulab",
        }
    )


def control_plane(ip: str) -> None:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler; waits for /readyz."""
    STATE.mkdir(parents=True, exist_ok=True)
    conf = RUN / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for user in ("admin", "controller-manager", "scheduler", "kubelet"):
        (conf / f"{user}.kubeconfig").write_text(kubeconfig(user))
    start(
        "etcd",
        [
            str(BIN / "etcd"),
            "--name=gpulab",
            f"--data-dir={STATE / 'etcd'}",
            "--listen-client-urls=http://127.0.0.1:2379",
            "--advertise-client-urls=http://127.0.0.1:2379",
            "--listen-peer-urls=http://127.0.0.1:2380",
            "--initial-advertise-peer-urls=http://127.0.0.1:2380",
            "--initial-cluster=gpulab=http://127.0.0.1:2380",
            "--unsafe-no-fsync",
        ],
    )
    wait_for(
        "etcd /health",
        lambda: b"true" in urllib.request.urlopen("http://127.0.0.1:2379/health", timeout=1).read(),
        30,
    )
    start(
        "kube-apiserver",
        [
            str(BIN / "kube-apiserver"),
            "--etcd-servers=http://127.0.0.1:2379",
            f"--secure-port={NET['api_port']}",
            f"--advertise-address={ip}",
            f"--tls-cert-file={PKI / 'apiserver.crt'}",
            f"--tls-private-key-file={PKI / 'apiserver.key'}",
            f"--client-ca-file={PKI / 'ca.crt'}",
            f"--kubelet-client-certificate={PKI / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={PKI / 'apiserver-kubelet-client.key'}",
            # The node's Hostname address (gpulab-h200) resolves nowhere: logs go by its IP.
            "--kubelet-preferred-address-types=InternalIP",
            f"--service-account-key-file={PKI / 'sa.pub'}",
            f"--service-account-signing-key-file={PKI / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={NET['service_cidr']}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true",
            "--profiling=false",
        ],
    )
    wait_for("kube-apiserver /readyz", lambda: api_get("/readyz") == "ok", 90)
    start(
        "kube-controller-manager",
        [
            str(BIN / "kube-controller-manager"),
            f"--kubeconfig={conf / 'controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={conf / 'controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={conf / 'controller-manager.kubeconfig'}",
            f"--service-account-private-key-file={PKI / 'sa.key'}",
            f"--root-ca-file={PKI / 'ca.crt'}",
            "--use-service-account-credentials=true",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
        ],
    )
    start(
        "kube-scheduler",
        [
            str(BIN / "kube-scheduler"),
            f"--kubeconfig={conf / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={conf / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={conf / 'scheduler.kubeconfig'}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
        ],
    )
    os.environ["GPULAB_KUBECONFIG"] = (conf / "admin.kubeconfig").read_text()
    (WORK / "admin.kubeconfig.path").write_text(str(conf / "admin.kubeconfig"))


def api_get(path: str) -> str:
    """GET ``path`` from the API server as the admin (client certificate)."""
    ctx = ssl.create_default_context(cafile=str(PKI / "ca.crt"))
    ctx.load_cert_chain(str(PKI / "admin.crt"), str(PKI / "admin.key"))
    with urllib.request.urlopen(api_url() + path, context=ctx, timeout=3) as r:
        return r.read().decode()


def containerd(nvidia: bool = False) -> None:
    """containerd with runc as the default runtime, CDI (always on in containerd 2.x;
    cdi_spec_dirs as upstream's default), the CNI config above, the harness's pause image; with
    ``nvidia``, NVIDIA's runtime beside runc (:func:`nvidia_runtime`)."""
    cfg = RUN / "containerd" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    # Without CAP_SYS_RESOURCE (some sandboxes) runc cannot lower a container's oom_score_adj
    # below its own (the pod sandbox asks for -998): then containerd clamps it, as for rootless.
    restrict = not has_capability(24)
    REC.facts["restrictOomScoreAdj"] = restrict
    CNI_CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CNI_CONF_DIR / "10-gpulab.conflist").write_text(cni_conflist())
    cfg.write_text(
        f"""version = 3
root = "{STATE / "containerd"}"
state = "{RUN / "containerd" / "state"}"
[grpc]
  address = "{CONTAINERD_SOCK}"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{IMAGES["pause"]}"
[plugins.'io.containerd.cri.v1.runtime']
  cdi_spec_dirs = ["/etc/cdi", "{CDI_DIR}"]
  restrict_oom_score_adj = {str(restrict).lower()}
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = "{BIN / "runc"}"
  SystemdCgroup = false
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["{CNI_BIN}"]
  conf_dir = "{CNI_CONF_DIR}"
"""
    )
    if nvidia:
        nvidia_runtime(cfg)
    shutil.copy(cfg, WORK / "containerd-config.toml")
    start(
        "containerd",
        [str(BIN / "containerd"), f"--config={cfg}"],
        env={"PATH": f"{BIN}:{os.environ.get('PATH', '')}"},
    )
    wait_for(
        "containerd socket",
        lambda: CONTAINERD_SOCK.exists() and ctr("version", check=False).returncode == 0,
        30,
    )


def nvidia_runtime(cfg: Path) -> None:
    """NVIDIA's runtime for containerd, as NVIDIA's container toolkit sets a node up: its config
    (/etc/nvidia-container-runtime/config.toml, ``mode = "cdi"``: NVIDIA_VISIBLE_DEVICES=<id>
    becomes the CDI device ``nvidia.com/gpu=<id>`` of the specs in /etc/cdi and /var/run/cdi,
    internal/modifier/cdi.go; the low-level runtime the harness's runc), then ``nvidia-ctk runtime
    configure --runtime=containerd``: runtime ``nvidia`` (its BinaryName the runtime, the rest
    runc's options) in a drop-in that the top-level config imports, CDI enabled. Not the
    default runtime: Pods ask for it by RuntimeClass ``nvidia``."""
    NVIDIA_RUNTIME_CONFIG.parent.mkdir(parents=True, exist_ok=True)
    NVIDIA_RUNTIME_CONFIG.write_text(
        f"""# gpu-lab real-node harness (hack/node/device/node.py): NVIDIA's runtime in cdi mode.
[nvidia-container-runtime]
debug = "{RUN / "nvidia-container-runtime.log"}"
log-level = "debug"
mode = "cdi"
runtimes = ["{BIN / "runc"}"]

[nvidia-container-runtime.modes.cdi]
default-kind = "nvidia.com/gpu"
spec-dirs = ["/etc/cdi", "{CDI_DIR}"]
annotation-prefixes = ["cdi.k8s.io/"]

[nvidia-ctk]
path = "{BIN / "nvidia-ctk"}"
"""
    )
    shutil.copy(NVIDIA_RUNTIME_CONFIG, WORK / "nvidia-container-runtime-config.toml")
    sh(
        [
            str(BIN / "nvidia-ctk"),
            "runtime",
            "configure",
            "--runtime=containerd",
            f"--config={cfg}",
            f"--drop-in-config={CONTAINERD_DROP_IN}",
            f"--nvidia-runtime-path={BIN / 'nvidia-container-runtime'}",
            "--cdi.enabled",
        ],
        name="nvidia-ctk-runtime-configure",
    )
    shutil.copy(CONTAINERD_DROP_IN, WORK / "containerd-99-nvidia.toml")
    text = CONTAINERD_DROP_IN.read_text()
    if "runtimes.nvidia" not in text or str(BIN / "nvidia-container-runtime") not in text:
        raise RuntimeError(f"nvidia-ctk runtime configure wrote no nvidia runtime: {text[:600]}")


def runtime_class() -> None:
    """RuntimeClass ``nvidia`` (handler ``nvidia``: containerd's runtime of that name), as k3s
    ships one and NVIDIA's operator makes one."""
    from kubernetes import client

    api, _, _ = clients()
    client.NodeV1Api(api).create_runtime_class(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {
                "name": RUNTIME_CLASS,
                "labels": {"app.kubernetes.io/part-of": "gpu-lab-node-harness"},
            },
            "handler": RUNTIME_CLASS,
        }
    )


def run_probe(
    name: str, image: str, argv: list[str], timeout: float, runtime_class: str | None = None
) -> tuple[str, str]:
    """A one-shot Pod ``kube-system/<name>`` running ``argv`` in ``image`` (under
    ``runtime_class`` if given): ``(its final phase, its log)``; the Pod is deleted either way.

    Raises:
        TimeoutError: it did not finish within ``timeout`` seconds (wait_for's).
    """
    _, core, _ = clients()
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [{"name": "probe", "image": image, "command": argv}],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    core.create_namespaced_pod(
        "kube-system", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
    )

    def done() -> str | None:
        phase = core.read_namespaced_pod(name, "kube-system").status.phase
        return phase if phase in ("Succeeded", "Failed") else None

    try:
        phase = wait_for(f"the probe Pod {name} done", done, timeout)
        return str(phase), read_log(core, name, "kube-system")
    finally:
        delete_pod("kube-system", name)


def api_probe() -> dict[str, Any]:
    """A Pod reaches the API server in-cluster: its KUBERNETES_SERVICE_HOST/PORT (the
    ``kubernetes`` Service) and a TCP connection there (bash's /dev/tcp; the chart's Pods then
    show TLS and their ServiceAccount's token working). Returns what the Pod printed."""
    script = (
        'echo "service=$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"; '
        'exec 3<>"/dev/tcp/$KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT" && echo connected'
    )
    phase, log = run_probe("gpulab-api-probe", IMAGES["smoke"], ["/bin/bash", "-c", script], 90)
    svc = clients()[1].read_namespaced_service("kubernetes", "default")
    result = {"phase": phase, "log": log, "serviceClusterIP": svc.spec.cluster_ip}
    if phase != "Succeeded" or "connected" not in log:
        raise RuntimeError(f"a Pod cannot reach the API server through the kubernetes Service: {result}")
    return result


def nvml_probe() -> dict[str, Any]:
    """What NVIDIA's device plugin image sees under NVIDIA's runtime (runtime class nvidia,
    ``NVIDIA_VISIBLE_DEVICES=all``): the driver's NVML library and device nodes the CDI spec
    injected, whether the update-ldcache hook wrote the image's /etc/ld.so.cache, and GFD run
    once through NVML. Evidence for the plugin's NVML lookup; never fatal."""
    script = (
        "echo libs: /usr/local/nvidia/lib64/libnvidia-ml.so*; echo devices: /dev/nvidia*; "
        "if [ -f /etc/ld.so.cache ]; then echo ldcache: present; else echo ldcache: absent; fi; "
        # GFD once, to a file: NVML loaded, initialised and read, or the reason it was not.
        "gpu-feature-discovery --oneshot --no-timestamp --use-node-feature-api=false "
        '--output-file=/tmp/gfd 2>&1; echo gfd-labels:; while read -r l; do echo "$l"; done </tmp/gfd'
    )
    try:
        phase, log = run_probe(
            "gpulab-nvml-probe", IMAGES["nvidia-dp"], ["/bin/sh", "-c", script], 60, RUNTIME_CLASS
        )
    except Exception as exc:  # evidence only: the lab's run goes on
        phase, log = "unknown", f"{type(exc).__name__}: {exc}"
    return {"phase": phase, "log": log}


def has_capability(bit: int) -> bool:
    """Whether this process has capability ``bit`` (24: CAP_SYS_RESOURCE) in its effective set."""
    for ln in _read("/proc/self/status").splitlines():
        if ln.startswith("CapEff:"):
            return bool(int(ln.split()[1], 16) >> bit & 1)
    return False


def ctr(
    *args: str, check: bool = True, name: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``ctr`` against the harness's containerd, namespace k8s.io (the CRI's)."""
    return sh(
        [str(BIN / "ctr"), f"--address={CONTAINERD_SOCK}", "-n", "k8s.io", *args],
        check=check,
        name=name,
        timeout=timeout,
    )


def images(gpu_host: bool = True, nvidia: bool = False, dra: bool = False) -> None:
    """The four images, made from this machine's files (image.py) and imported: the sandbox
    (gpulab-pause), the device plugin (its binary and the libraries it and libnvidia-ml need),
    the smoke image (a shell, bash for the API probe, and the C library; nvidia-smi comes from
    the CDI spec), the compute image (gpulab-vectoradd, also at :data:`VECTORADD_PATH`, a shell,
    and what libcuda needs; libcuda and nvidia-smi come from the CDI spec); with ``nvidia``,
    NVIDIA's two (:func:`nvidia_image_specs`); with ``dra``, the DRA driver's
    (:func:`dra_image_specs`), also tagged as the chart's own image reference."""
    d = RUN / "images"
    d.mkdir(parents=True, exist_ok=True)
    if gpu_host:
        nvml_lib, cuda_lib = lib_path("libnvidia-ml.so.1"), lib_path("libcuda.so.1")
        smi = shutil.which("nvidia-smi") or "/usr/bin/nvidia-smi"
    else:  # the rehearsal on a machine without a driver: the shell's own C library
        nvml_lib = cuda_lib = smi = "/bin/sh"
    REC.facts["nvmlLibrary"], REC.facts["cudaLibrary"] = nvml_lib, cuda_lib
    # As NVIDIA's CUDA images set them (gitlab.com/nvidia/container-images/cuda, base
    # Dockerfile ENV PATH and LD_LIBRARY_PATH, "LD_LIBRARY_PATH NOTICE" in its README): a
    # driver installed under /usr/local/nvidia (this machine's: the CDI spec mounts its
    # nvidia-smi at /usr/local/nvidia/bin) is found there.
    path_env = "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # noqa: E501
    ld_env = "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64"
    specs = {
        "pause": ["--add", f"/pause={BIN / 'gpulab-pause'}", "--entrypoint", "/pause"],
        "plugin": [
            "--add", f"/usr/local/bin/gpulab-device-plugin={BIN / 'gpulab-device-plugin'}",
            "--libs-of", nvml_lib, "--entrypoint", "/usr/local/bin/gpulab-device-plugin",
        ],
        "smoke": [
            "--add", "/bin/sh=/bin/sh", "--add", "/bin/bash=/bin/bash", "--libs-of", smi, "--env", path_env,
            "--env", ld_env, "--cmd", "sh",
        ],
        "compute": [
            "--add", f"/usr/local/bin/gpulab-vectoradd={BIN / 'gpulab-vectoradd'}",
            # The lab's compute command is `sh -c "nvidia-smi -L; exec /cuda-samples/vectorAdd"`
            # (gpulab.kube.compute COMPUTE_SCRIPT, the path of NVIDIA's sample image): a shell,
            # and the project's vector add at that path.
            "--add", f"{VECTORADD_PATH}={BIN / 'gpulab-vectoradd'}", "--add", "/bin/sh=/bin/sh",
            "--libs-of", cuda_lib, "--libs-of", "/bin/sh", "--env", path_env, "--env", ld_env,
            "--entrypoint", "/usr/local/bin/gpulab-vectoradd",
        ],
    }  # fmt: skip
    if nvidia:
        IMAGES.update(nvidia_images())
        specs.update(nvidia_image_specs(nvml_lib))
    if dra:
        IMAGES.update(dra_images())
        specs.update(dra_image_specs(nvml_lib, smi))
    for key, args in specs.items():
        tar = d / f"{key}.tar"
        sh(
            [sys.executable, str(HERE / "image.py"), "--name", IMAGES[key], "--out", str(tar), *args],
            name=f"image-{key}",
        )
        ctr("images", "import", "--platform", "linux/amd64", str(tar), name=f"import-{key}")
    if dra:
        # The lab sets no image of the DRA driver's chart (components/dra.py helm_values: values
        # only, no image key), so the chart's own reference (values.yaml image.repository, tag
        # v<appVersion>: _helpers.tpl fullimage; pullPolicy IfNotPresent) names the harness's.
        DRA["chartImage"] = dra_chart_image()
        ctr("images", "tag", "--force", IMAGES["dra"], DRA["chartImage"], name="tag-dra")
    ctr("images", "ls", name="images-ls")


def nvidia_image_specs(nvml_lib: str = "/bin/sh") -> dict[str, list[str]]:
    """image.py's arguments for NVIDIA's two images, as their upstream Dockerfiles lay them out:
    k8s-device-plugin (deployments/container/Dockerfile: the four binaries in /usr/bin, a shell
    at /bin/sh, ENV NVIDIA_DISABLE_REQUIRE=true, NVIDIA_VISIBLE_DEVICES=all,
    NVIDIA_DRIVER_CAPABILITIES=compute,utility, ENTRYPOINT nvidia-device-plugin; the driver's
    libraries come from the CDI spec that NVIDIA's runtime injects) and node-feature-discovery
    (Dockerfile: the binaries in /usr/bin, nfd-worker.conf, ENV GRPC_GO_LOG_SEVERITY_LEVEL=INFO,
    USER 65534:65534; static binaries, no shell)."""
    nbin = NVIDIA_OPT / "bin"
    v = nvidia_versions()
    path = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    dp = [a for b in NVIDIA_DP_BINARIES for a in ("--add", f"/usr/bin/{b}={nbin / b}")]
    nfd = [a for b in NFD_BINARIES for a in ("--add", f"/usr/bin/{b}={nbin / b}")]
    worker_conf = NVIDIA_OPT / "nfd-worker.conf"
    if worker_conf.is_file():
        nfd += ["--add", f"/etc/kubernetes/node-feature-discovery/nfd-worker.conf={worker_conf}"]
    return {
        "nvidia-dp": [
            # The C library NVML needs beside the binaries' own (--libs-of: libm, libdl,
            # libpthread, librt, ...), as upstream's distroless base image carries glibc whole. On
            # the lent H200 (2026-12-03) without them NVIDIA's plugin and GFD v0.19.0 could not
            # dlopen libnvidia-ml.so.1 ("Incompatible strategy detected auto" / "unsupported
            # strategy auto") although the CDI spec had mounted it and the update-ldcache hook had
            # written the image's ld.so.cache (the NVML probe Pod's record).
            *dp, "--add", "/bin/sh=/bin/sh", "--libs-of", nvml_lib, "--env", path,
            "--env", "NVIDIA_DISABLE_REQUIRE=true",
            "--env", "NVIDIA_VISIBLE_DEVICES=all", "--env", "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
            "--label", "name=NVIDIA Device Plugin", "--label", "vendor=NVIDIA",
            "--label", f"version=v{v.get('NVIDIA_DEVICE_PLUGIN_VERSION', '')}",
            "--entrypoint", "nvidia-device-plugin",
        ],
        "nfd": [
            *nfd, "--env", path, "--env", "GRPC_GO_LOG_SEVERITY_LEVEL=INFO", "--user", "65534:65534",
            "--label", f"version=v{v.get('NFD_VERSION', '')}",
        ],
    }  # fmt: skip


def dra_images() -> dict[str, str]:
    """The DRA driver's image, named by the unpacked driver's version."""
    version = stack_versions(DRA_OPT).get("DRA_DRIVER_VERSION", "0.5.0")
    return {"dra": f"gpulab.local/dra-driver-nvidia-gpu:v{version}"}


def dra_chart_image() -> str:
    """The image reference the unpacked chart renders by default: values.yaml ``image.repository``
    and ``image.tag``, else ``v`` + Chart.yaml ``appVersion`` (_helpers.tpl ``fullimage``)."""
    chart = DRA_OPT / DRA_RELEASE
    block = re.search(r"^image:\n((?:[ #].*\n|\n)*)", _read(str(chart / "values.yaml")), re.M)
    fields = dict(
        re.findall(r"^  (repository|tag): *\"?([^\"\s]*)\"?", block.group(1) if block else "", re.M)
    )
    app = re.search(r"^appVersion: *\"?([^\"\s]+)", _read(str(chart / "Chart.yaml")), re.M)
    if not fields.get("repository") or not (fields.get("tag") or app):
        raise RuntimeError(f"no default image in {chart}'s values.yaml and Chart.yaml")
    return f"{fields['repository']}:{fields.get('tag') or 'v' + app.group(1)}"  # type: ignore[union-attr]


#: What the DRA driver's image holds of busybox in upstream's (gcr.io/distroless/cc:debug): the
#: tools its scripts run (deployments/container/Dockerfile: kubelet-plugin-prestart.sh needs ln,
#: find, date, sleep, head, env, readlink, basename; the chart's container command cp, sed and
#: mount when it masks the driver's params; the plugin chroot), from this machine.
DRA_IMAGE_TOOLS: tuple[str, ...] = (
    "ln",
    "find",
    "head",
    "basename",
    "ls",
    "date",
    "env",
    "sleep",
    "readlink",
)
DRA_IMAGE_TOOLS += ("cp", "sed", "mount", "chroot")


def dra_image_specs(nvml_lib: str = "/bin/sh", smi: str = "/bin/sh") -> dict[str, list[str]]:
    """image.py's arguments for the DRA driver's image as upstream's Dockerfile lays it out
    (deployments/container/Dockerfile at the tag): gpu-kubelet-plugin and nvidia-cdi-hook in
    /usr/bin (the plugin copies the hook into the kubelet's plugin directory for the CDI specs it
    writes), /usr/bin/kubelet-plugin-prestart.sh, /templates, /LICENSE, bash at /bin/bash, ENV
    NVIDIA_DISABLE_REQUIRE=true, NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility,
    user root, no entrypoint (the chart gives each container its command); for distroless/cc's
    glibc and busybox, this machine's C library whole (``--libs-of`` NVML and nvidia-smi: the
    plugin dlopens NVML from the driver root, the init container runs nvidia-smi from there) and
    :data:`DRA_IMAGE_TOOLS`."""
    dbin, files = DRA_OPT / "bin", DRA_OPT / "image"
    v = stack_versions(DRA_OPT)
    args = [a for b in DRA_BINARIES for a in ("--add", f"/usr/bin/{b}={dbin / b}")]
    args += ["--add", f"/usr/bin/kubelet-plugin-prestart.sh={files / 'kubelet-plugin-prestart.sh'}"]
    args += ["--add", f"/LICENSE={files / 'LICENSE'}", "--add", "/bin/bash=/bin/bash"]
    for tmpl in sorted((files / "templates").glob("*")):
        args += ["--add", f"/templates/{tmpl.name}={tmpl}"]
    tools = {t: shutil.which(t) for t in DRA_IMAGE_TOOLS}
    DRA["imageTools"] = tools
    for t, path in tools.items():
        if path:
            args += ["--add", f"/usr/bin/{t}={path}"]
    return {
        "dra": [
            *args, "--libs-of", nvml_lib, "--libs-of", smi,
            "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--env", "NVIDIA_DISABLE_REQUIRE=true", "--env", "NVIDIA_VISIBLE_DEVICES=all",
            "--env", "NVIDIA_DRIVER_CAPABILITIES=utility",
            "--label", "name=DRA Driver for NVIDIA GPUs", "--label", "vendor=NVIDIA",
            "--label", f"version=v{v.get('DRA_DRIVER_VERSION', '')}",
        ]
    }  # fmt: skip


def kubelet(ip: str, labels: dict[str, str] | None = None) -> None:
    """The kubelet: containerd's CRI, cgroupfs, webhook authn/authz against the API server,
    x509 client CA; registers node gpulab-h200 with ``ip`` (and ``labels``: --node-labels)."""
    conf = RUN / "conf"
    resolv = conf / "resolv.conf"
    resolv.write_text("search cluster.local\noptions ndots:1\n")
    cfg = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(PKI / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCK}",
        "failSwapOn": False,
        "resolvConf": str(resolv),
        "clusterDomain": "cluster.local",
        # As every kubeadm cluster has one; no DNS server answers there (the lab's Pods need
        # none), but the kubelet stops warning MissingClusterDNS on each Pod.
        "clusterDNS": [NET["cluster_dns"]],
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "healthzBindAddress": "127.0.0.1",
        "imageGCHighThresholdPercent": 100,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "failCgroupV1": os.environ.get("GPULAB_NODE_CGROUPV1") != "allow",
    }
    (conf / "kubelet.yaml").write_text(json.dumps(cfg, indent=1))
    shutil.copy(conf / "kubelet.yaml", WORK / "kubelet-config.json")
    start(
        "kubelet",
        [
            str(BIN / "kubelet"),
            f"--config={conf / 'kubelet.yaml'}",
            f"--kubeconfig={conf / 'kubelet.kubeconfig'}",
            f"--hostname-override={NODE}",
            f"--node-ip={ip}",
            *([f"--node-labels={','.join(f'{k}={v}' for k, v in labels.items())}"] if labels else []),
            "--v=2",
        ],
        env={"PATH": f"{BIN}:{os.environ.get('PATH', '')}"},
    )


# ---------------------------------------------------------------- the cluster, through the client


def clients() -> tuple[Any, Any, Any]:
    from kubernetes import client

    from gpulab.kube.client import load_clients

    api = load_clients()
    return api, client.CoreV1Api(api), client.AppsV1Api(api)


def node_doc() -> dict[str, Any] | None:
    api, core, _ = clients()
    try:
        return api.sanitize_for_serialization(core.read_node(NODE))
    except Exception:
        return None


def node_ready(doc: dict[str, Any] | None) -> bool:
    conds = ((doc or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def gpu(doc: dict[str, Any] | None, field: str = "allocatable") -> str | None:
    return (((doc or {}).get("status") or {}).get(field) or {}).get("nvidia.com/gpu")


def wait_node_ready() -> None:
    wait_for(f"node {NODE} Ready", lambda: node_ready(node_doc()), 120)
    _, core, _ = clients()
    wait_for(
        "ServiceAccounts default/default and kube-system/default",
        lambda: (
            core.read_namespaced_service_account("default", "default")
            and core.read_namespaced_service_account("default", "kube-system")
        ),
        60,
    )
    save_json("node-ready.json", node_doc())


def read_log(core: Any, pod: str, namespace: str, **params: Any) -> str:
    """A Pod's log as text. Not the client's own decoding: kubernetes 36 returns the bytes'
    repr (kubernetes-client/python#2596; gpulab.core.rawapi.pod_log reads it the same way)."""
    response = core.read_namespaced_pod_log(pod, namespace, _preload_content=False, **params)
    return bytes(response.data or b"").decode("utf-8", errors="replace")


def save_json(name: str, doc: Any) -> None:
    (WORK / name).write_text(json.dumps(doc, indent=1, default=str))


def plugin_daemonset(nvml_lib: str, fake_gpus: int = 0) -> dict[str, Any]:
    """The project's device plugin as a DaemonSet: privileged (NVML opens /dev/nvidia*), the
    kubelet's device-plugin directory, the CDI spec it maps GPUs to, the driver's library
    directory (read-only) and the fault-injection directory (the negative test)."""
    lib_dir = str(Path(nvml_lib).parent)

    def host(name: str, path: str, ro: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            {
                "name": name,
                "hostPath": {"path": path, "type": "Directory" if name != "faults" else "DirectoryOrCreate"},
            },
            {
                "name": name,
                "mountPath": path if name != "driver" else "/run/nvidia-driver-lib",
                "readOnly": ro,
            },
        )

    vols = [
        host("device-plugins", "/var/lib/kubelet/device-plugins", False),
        host("cdi", str(CDI_DIR), True),
        host("driver", lib_dir, True),
        host("faults", str(FAULTS), True),
    ]
    probe = {
        "exec": {"command": ["/usr/local/bin/gpulab-device-plugin", "-probe"]},
        "periodSeconds": 2,
        "failureThreshold": 2,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": PLUGIN_DS, "namespace": PLUGIN_NS, "labels": PLUGIN_LABELS},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/instance": PLUGIN_DS}},
            "template": {
                "metadata": {"labels": PLUGIN_LABELS},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "device-plugin",
                            "image": IMAGES["plugin"],
                            "args": [
                                f"-cdi-spec={CDI_SPEC}",
                                f"-fault-file={FAULT_FILE}",
                                f"-fake-gpus={fake_gpus}"
                                if fake_gpus
                                else f"-nvml-library=/run/nvidia-driver-lib/{Path(nvml_lib).name}",
                            ],
                            "securityContext": {"privileged": True},
                            "readinessProbe": probe,
                            "volumeMounts": [m for _, m in vols],
                        }
                    ],
                    "volumes": [v for v, _ in vols],
                },
            },
        },
    }


def start_plugin(fake_gpus: int = 0) -> float:
    """Apply the plugin's DaemonSet; wait for it to be ready and the node to advertise
    nvidia.com/gpu. Returns the seconds from apply to allocatable."""
    _, _, apps = clients()
    FAULTS.mkdir(parents=True, exist_ok=True)
    FAULT_FILE.unlink(missing_ok=True)
    ds = plugin_daemonset(REC.facts["nvmlLibrary"], fake_gpus)
    save_json("plugin-daemonset.json", ds)
    t = now()
    apps.create_namespaced_daemon_set(PLUGIN_NS, ds)

    def ready() -> bool:
        st = apps.read_namespaced_daemon_set_status(PLUGIN_DS, PLUGIN_NS).status
        return bool(st.desired_number_scheduled) and st.number_ready == st.desired_number_scheduled

    wait_for("the plugin DaemonSet ready", ready, 120)
    wait_for("node allocatable nvidia.com/gpu", lambda: gpu(node_doc()) not in (None, "0"), 60)
    seconds = now() - t
    save_json("node-with-gpu.json", node_doc())
    return round(seconds, 3)


# ---------------------------------------------------------------- the lab's checks


def lab(argv: Sequence[str], name: str, timeout: float) -> dict[str, Any]:
    """``python3 -m gpulab.kube <argv>`` (the lab's own command) with the admin kubeconfig in
    GPULAB_KUBECONFIG, as the program's Command runs it; its stdout JSON, stderr, rc, time."""
    t = now()
    # From the lab copy's directory: `python -m` puts the working directory first on sys.path,
    # and the checkout there is main's, not the branch under test.
    p = sh(
        [sys.executable, "-m", "gpulab.kube", *argv],
        check=False,
        timeout=budget(timeout),
        name=name,
        cwd=HERE / "lab",
    )
    result: dict[str, Any] = {
        "argv": ["python", "-m", "gpulab.kube", *argv],
        "rc": p.returncode,
        "seconds": round(now() - t, 3),
    }
    (WORK / f"{name}.stdout").write_text(p.stdout)
    (WORK / f"{name}.stderr").write_text(p.stderr)
    try:
        result["stdout"] = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        result["stdout"] = p.stdout
    result["stderr"] = p.stderr
    return result


def gate_argv(rendered: Sequence[str]) -> tuple[list[str], list[str]]:
    """The program's gate argv (after ``python -m gpulab.kube``) for this node: where the
    program renders the operator's device-plugin DaemonSet, the harness's plugin is named
    instead, and the ClusterPolicy wait is off (no operator runs); the list of those changes."""
    argv, changes = list(rendered), []
    for flag, value in (("--device-plugin-namespace", PLUGIN_NS), ("--device-plugin-daemonset", PLUGIN_DS)):
        if flag not in argv:  # a rendering that finds the plugin another way (by labels)
            continue
        i = argv.index(flag)
        if argv[i + 1] != value:
            changes.append(f"{flag} {argv[i + 1]} -> {value}")
            argv[i + 1] = value
    if "--no-cluster-policy" not in argv:
        argv.append("--no-cluster-policy")
        changes.append("+ --no-cluster-policy")
    return argv, changes


def create_pod(manifest: dict[str, Any]) -> None:
    """Create the Pod as the program's pulumi-kubernetes Pod resource would (its rendered
    apiVersion, kind, metadata and spec)."""
    _, core, _ = clients()
    core.create_namespaced_pod(manifest["metadata"]["namespace"], manifest)


def pod_logs(namespace: str, pod: str, containers: Sequence[str]) -> dict[str, str]:
    _, core, _ = clients()
    return {c: read_log(core, pod, namespace, container=c) for c in containers}


def delete_pod(namespace: str, pod: str) -> None:
    _, core, _ = clients()
    with contextlib.suppress(Exception):
        core.delete_namespaced_pod(pod, namespace, grace_period_seconds=0)
    wait_for(f"Pod {namespace}/{pod} gone", lambda: not _exists(core, namespace, pod), 60)


def _exists(core: Any, namespace: str, pod: str) -> bool:
    from kubernetes.client.rest import ApiException

    try:
        core.read_namespaced_pod(pod, namespace)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def host_gpus(smi: str = "nvidia-smi") -> list[dict[str, str]]:
    """The host's GPUs from ``nvidia-smi --query-gpu`` (index, name, uuid, driver)."""
    out = sh([smi, "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader,nounits"]).stdout
    rows = [
        dict(zip(("index", "name", "uuid", "driver"), (c.strip() for c in ln.split(",")), strict=True))
        for ln in out.strip().splitlines()
    ]
    return rows


def pod_doc(namespace: str, pod: str) -> Any:
    api, core, _ = clients()
    return api.sanitize_for_serialization(core.read_namespaced_pod(pod, namespace))


def events(namespace: str) -> Any:
    api, core, _ = clients()
    return [api.sanitize_for_serialization(e) for e in core.list_namespaced_event(namespace).items]


def positive(rendered: dict[str, Any], summary: dict[str, Any], smi: str = "nvidia-smi") -> None:
    """The gate, the smoke Pod and check, the compute Pod and check, as rendered (``smi``: the
    host's nvidia-smi; the rehearsal's stand-in)."""
    pos = rendered["positive"]
    census(pos, summary)
    gate, changes = gate_argv(pos["gate"])
    summary["gateArgvChanges"] = changes
    with REC.step("gate"):
        r = lab(gate, "gate", 700)
        summary["gate"] = r
        if r["rc"] != 0:
            raise RuntimeError(f"the gate failed: {r['stderr'][-600:]}")
    single_pods(pos, summary, smi)


def census(pos: dict[str, Any], summary: dict[str, Any]) -> None:
    """The existing variant's read-only census, as rendered, on the node's kubeconfig."""
    with REC.step("census"):
        kc = RUN / "conf" / "admin.kubeconfig"
        argv = [str(kc) if a == "KUBECONFIG_PATH" else a for a in pos["census"]]
        p = sh([sys.executable, *argv], check=False, timeout=60, name="census", cwd=HERE / "lab")
        (WORK / "census.stdout").write_text(p.stdout)
        summary["census"] = {"argv": ["python", *argv], "rc": p.returncode, "stderr": p.stderr[-2000:]}
        with contextlib.suppress(ValueError):
            summary["census"]["stdout"] = json.loads(p.stdout)


def single_pods(pos: dict[str, Any], summary: dict[str, Any], smi: str = "nvidia-smi") -> None:
    """The host's GPUs and the lab's host probe, then the chapter's one smoke Pod and its check
    and the one compute Pod and its check, as rendered in ``pos``; the smoke log's driver and
    UUIDs compared with the host's."""
    from gpulab.kube import smoke_gpus

    host = host_gpus(smi)
    summary["host"] = host
    with (
        REC.step("host-probe"),
        contextlib.suppress(Exception) if smi != "nvidia-smi" else contextlib.nullcontext(),
    ):
        # The lab's own host probe (NVML, else nvidia-smi), as `hostProbe: nvidia-smi` runs it.
        from gpulab.host import probe

        facts = probe.probe_host()
        save_json("host-probe.json", facts.to_json())
        summary["hostProbeSource"] = facts.source
    with REC.step("smoke"):
        smoke = pos["smoke"]
        create_pod(smoke["pod"])
        r = lab(smoke["check"], "smoke-check", 400)
        summary["smoke"] = r
        ns, name = smoke["pod"]["metadata"]["namespace"], smoke["pod"]["metadata"]["name"]
        log = pod_logs(ns, name, ["cuda"])["cuda"]
        (WORK / "smoke-pod.log").write_text(log)
        save_json("smoke-pod.json", pod_doc(ns, name))
        seen: dict[str, Any] = r["stdout"] if isinstance(r.get("stdout"), dict) else {}
        summary["smokeComparison"] = {
            "driverMatches": seen.get("smokeDriverVersion") == host[0]["driver"],
            "uuidsMatch": sorted(seen.get("smokeGpuUuids") or []) == sorted(h["uuid"] for h in host),
            "logUuids": smoke_gpus.gpu_uuids(log),
        }
        if r["rc"] != 0:
            raise RuntimeError(f"the smoke check failed: {r['stderr'][-600:]}")
        delete_pod(ns, name)
    with REC.step("compute"):
        comp = pos["compute"]
        create_pod(comp["pod"])
        r = lab(comp["check"], "compute-check", 400)
        summary["compute"] = r
        ns, name = comp["pod"]["metadata"]["namespace"], comp["pod"]["metadata"]["name"]
        containers = [c["name"] for c in comp["pod"]["spec"]["containers"]]
        logs = pod_logs(ns, name, containers)
        for c, text in logs.items():
            (WORK / f"compute-{c}.log").write_text(text)
        save_json("compute-pod.json", pod_doc(ns, name))
        summary["computeComparison"] = {c: smoke_gpus.gpu_uuids(text) for c, text in logs.items()}
        if r["rc"] != 0:
            raise RuntimeError(f"the compute check failed: {r['stderr'][-600:]}")
        delete_pod(ns, name)
    save_json(f"events-{ns}.json", events(ns))
    plugin_log("device-plugin-positive")


def plugin_log(name: str) -> None:
    """The device plugin pod's log so far (what it saw and sent the kubelet)."""
    with contextlib.suppress(Exception):
        _, core, _ = clients()
        for p in core.list_namespaced_pod(
            PLUGIN_NS, label_selector=f"app.kubernetes.io/instance={PLUGIN_DS}"
        ).items:
            (WORK / f"{name}.log").write_text(read_log(core, p.metadata.name, PLUGIN_NS))


def negative(rendered: dict[str, Any], summary: dict[str, Any]) -> None:
    """The plugin reports every GPU Unhealthy (the fault file): the kubelet drops
    allocatable to 0 (capacity stays); the gate, as rendered with the negative's grace, must
    fail within that grace with the diagnosis; then the GPU comes back."""
    neg: dict[str, Any] = {}
    summary["negative"] = neg
    with REC.step("negative-unhealthy"):
        t = now()
        FAULT_FILE.write_text("all  # gpu-lab node harness: the negative test\n")
        wait_for("allocatable nvidia.com/gpu 0", lambda: gpu(node_doc()) == "0", 60)
        neg["secondsToAllocatableZero"] = round(now() - t, 3)
        neg["nodeWhileUnhealthy"] = {"allocatable": gpu(node_doc()), "capacity": gpu(node_doc(), "capacity")}
        save_json("node-unhealthy.json", node_doc())
        gate, changes = gate_argv(rendered["negative"]["gate"])
        neg["gateArgvChanges"] = changes
        r = lab(gate, "gate-unhealthy", 700)
        neg["gate"] = r
        if r["rc"] == 0:
            raise RuntimeError("the gate passed on an unhealthy GPU")
    with REC.step("negative-recover"):
        t = now()
        FAULT_FILE.unlink()
        wait_for("allocatable nvidia.com/gpu back to 1", lambda: gpu(node_doc()) == "1", 60)
        neg["secondsToRecover"] = round(now() - t, 3)
    plugin_log("device-plugin-negative")
    save_json("events-kube-system.json", events(PLUGIN_NS))


# ---------------------------------------------------------------- the GPU stack found installed


def plugin_state() -> dict[str, Any]:
    """The found GPU stack as the cluster has it: the plugin DaemonSet's uid, generation and
    labels, its Pods (name, uid, restarts): the same before and after the lab's fleet check
    when the lab installs and deletes nothing of it."""
    _, core, apps = clients()
    ds = apps.read_namespaced_daemon_set(PLUGIN_DS, PLUGIN_NS)
    pods = core.list_namespaced_pod(PLUGIN_NS, label_selector=f"app.kubernetes.io/instance={PLUGIN_DS}").items
    return {
        "daemonset": f"{PLUGIN_NS}/{PLUGIN_DS}",
        "uid": ds.metadata.uid,
        "generation": ds.metadata.generation,
        "labels": dict(ds.metadata.labels or {}),
        "pods": sorted(
            (p.metadata.name, p.metadata.uid, sum(c.restart_count for c in p.status.container_statuses or []))
            for p in pods
        ),
    }


def fleet_positive(rendered: dict[str, Any], summary: dict[str, Any], smi: str = "nvidia-smi") -> None:
    """``gpuStack: found`` as rendered (``rendered["fleet"]["positive"]``): the census, the
    access check, the lab's namespace, the fleet check (the node's row: expected from
    ``nodePoolGpus``, the plugin found by its labels, a smoke and a compute Pod pinned to the
    node), then the chapter's single smoke and compute Pods in the lab's namespace. The fleet
    check's argv is used unchanged."""
    pos = rendered["fleet"]["positive"]
    fl: dict[str, Any] = {"argv": pos["fleet"]}
    summary["fleet"] = fl
    census(pos, summary)
    with REC.step("access"):
        r = lab(pos["access"], "access", 120)
        summary["access"] = r
        if r["rc"] != 0:
            raise RuntimeError(f"the access check failed: {r['stderr'][-600:]}")
    with REC.step("namespace"):
        _, core, _ = clients()
        core.create_namespace(pos["namespace"])
        summary["namespace"] = pos["namespace"]["metadata"]["name"]
    fl["pluginBefore"] = plugin_state()
    with REC.step("fleet"):
        r = lab(pos["fleet"], "fleet", 900)
        fl["check"] = r
        fl["pluginAfter"] = plugin_state()
        fl["pluginUntouched"] = fl["pluginAfter"] == fl["pluginBefore"]
        if r["rc"] != 0 or not isinstance(r.get("stdout"), dict):
            raise RuntimeError(f"the fleet check failed: {r['stderr'][-600:]}")
        rows = r["stdout"].get("nodes") or []
        fl["rows"] = [
            {k: row.get(k) for k in ("node", "expected", "expectedSource", "allocatable", "gate", "smoke",
                                     "compute", "status", "driverVersion", "firstFailure")}
            for row in rows
        ]  # fmt: skip
        fl["summary"] = r["stdout"].get("nodesSummary")
        host = host_gpus(smi)
        fl["comparison"] = {
            row["node"]: {
                "driverMatches": row.get("driverVersion") == host[0]["driver"],
                "uuidsMatch": sorted(row.get("smokeGpuUuids") or []) == sorted(h["uuid"] for h in host),
            }
            for row in rows
        }
        if not fl["pluginUntouched"]:
            raise RuntimeError(f"the fleet check changed the found device plugin: {fl}")
    single_pods(pos, summary, smi)


def fleet_negative(rendered: dict[str, Any], summary: dict[str, Any]) -> None:
    """The plugin reports the GPU Unhealthy; the fleet check, as rendered with the negative's
    grace, must fail within it naming the node and the cause (no node passed its gate); then
    the GPU comes back, and the lab's namespace is deleted as ``make destroy`` deletes it."""
    neg: dict[str, Any] = {}
    summary["negative"] = neg
    with REC.step("negative-unhealthy"):
        t = now()
        FAULT_FILE.write_text("all  # gpu-lab node harness: the negative test\n")
        wait_for("allocatable nvidia.com/gpu 0", lambda: gpu(node_doc()) == "0", 60)
        neg["secondsToAllocatableZero"] = round(now() - t, 3)
        neg["nodeWhileUnhealthy"] = {"allocatable": gpu(node_doc()), "capacity": gpu(node_doc(), "capacity")}
        save_json("node-unhealthy.json", node_doc())
        r = lab(rendered["fleet"]["negative"]["fleet"], "fleet-unhealthy", 700)
        neg["fleet"] = r
        if r["rc"] == 0:
            raise RuntimeError("the fleet check passed on an unhealthy GPU")
    with REC.step("negative-recover"):
        t = now()
        FAULT_FILE.unlink()
        wait_for("allocatable nvidia.com/gpu back to 1", lambda: gpu(node_doc()) == "1", 60)
        neg["secondsToRecover"] = round(now() - t, 3)
    plugin_log("device-plugin-negative")
    save_json("events-kube-system.json", events(PLUGIN_NS))
    with REC.step("namespace-delete"):
        from kubernetes.client.rest import ApiException

        name = rendered["fleet"]["positive"]["namespace"]["metadata"]["name"]
        _, core, _ = clients()
        save_json(f"events-{name}.json", events(name))
        core.delete_namespace(name)

        def gone() -> bool:
            try:
                core.read_namespace(name)
                return False
            except ApiException as exc:
                return exc.status == 404

        wait_for(f"namespace {name} gone", gone, 60)
        summary["pluginAfterDestroy"] = plugin_state()
        before = summary["fleet"]["pluginBefore"]
        summary["pluginUntouchedAfterDestroy"] = summary["pluginAfterDestroy"] == before


# ---------------------------------------------------------------- teardown


def teardown(summary: dict[str, Any]) -> None:
    """Delete what the run made in the cluster, kill every pod's processes (cgroup.kill of
    the kubelet's kubepods cgroup), stop every daemon (kubelet first, etcd last) and the
    shims, unmount what the node mounted, and list what is left."""
    with contextlib.suppress(Exception):
        _, _, apps = clients()
        apps.delete_namespaced_daemon_set(PLUGIN_DS, PLUGIN_NS)
    with contextlib.suppress(Exception):
        ctr("tasks", "ls", name="tasks-before-teardown", check=False, timeout=10)
    kubepods = Path("/sys/fs/cgroup/kubepods")
    for name, p in reversed(PROCS):
        if name == "kubelet" and kubepods.exists():
            with contextlib.suppress(OSError):
                (kubepods / "cgroup.kill").write_text("1")
                say("   killed every pod process (kubepods cgroup.kill)")
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        say(f"   stopped {name} (rc {p.returncode})")
    # Pods' processes left (cgroup v1 has no cgroup.kill): every PID in a kubepods cgroup.
    for pid in pod_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            say(f"   killed pod process {pid}")
    # The shims outlive containerd by design.
    for pid, exe in own_processes():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            say(f"   killed leftover {exe} ({pid})")
    time.sleep(0.5)
    for m in sorted(our_mounts(), key=len, reverse=True):
        sh(["umount", "-l", m], check=False)
    left = summary.setdefault("leftovers", {})
    left["madeRprivateAgain"] = unbind_shared()
    if driver_cdi_specs():  # the DRA driver's (listed by the census first)
        left["driverCdiSpecsRemoved"] = driver_cdi_specs()
        for spec in driver_cdi_specs():
            Path(spec).unlink()
    # A cgroup can be removed once its last process has gone: a few tries, every hierarchy
    # (cgroup v2's one, or v1's per controller).
    for _ in range(6):
        roots = [r for r in (kubepods, *Path("/sys/fs/cgroup").glob("*/kubepods")) if r.exists()]
        if not roots:
            break
        for root in roots:
            for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                with contextlib.suppress(OSError):
                    d.rmdir()
            with contextlib.suppress(OSError):
                root.rmdir()
        time.sleep(0.5)
    REC.facts["sysctlsAfter"] = {k: _read(f"/proc/sys/{k}").strip() for k in SYSCTLS}
    if str(summary.get("mode")).startswith("rehearse"):
        restore_sysctls()
    if NVIDIA_RUNTIME_CONFIG.exists():  # the harness's own node setup (NVIDIA's runtime)
        left["nvidiaRuntimeConfigRemoved"] = str(NVIDIA_RUNTIME_CONFIG)
        NVIDIA_RUNTIME_CONFIG.unlink()
        with contextlib.suppress(OSError):
            NVIDIA_RUNTIME_CONFIG.parent.rmdir()
    if (RUN / "nvidia-container-runtime.log").exists():
        shutil.copy(RUN / "nvidia-container-runtime.log", WORK / "nvidia-container-runtime.log")
    if str(summary.get("mode")).startswith("rehearse") and FEATURES_D.is_dir():
        # This project's machine: GFD's file (the lab's leftover, listed above) goes.
        shutil.rmtree(FEATURES_D.parent, ignore_errors=True)
        with contextlib.suppress(OSError):
            FEATURES_D.parent.parent.rmdir()  # /etc/kubernetes, when only that made it
    left |= {
        "processes": [f"{pid} {exe}" for pid, exe in own_processes()],
        "mounts": our_mounts(),
        "kubepodsCgroup": kubepods.exists() or any(Path("/sys/fs/cgroup").glob("*/kubepods")),
        "podProcesses": pod_processes(),
        # No `ip` here to delete it: the bridge stays until the machine goes back.
        "cni0": "cni0" in os.listdir("/sys/class/net"),
        "featuresD": sorted(str(p) for p in FEATURES_D.glob("*")) if FEATURES_D.is_dir() else [],
    }


def pod_processes() -> list[int]:
    """PIDs in the kubelet's pod cgroups (cgroup v2: /sys/fs/cgroup/kubepods; v1: under each
    controller's hierarchy)."""
    pids: set[int] = set()
    for root in Path("/sys/fs/cgroup").glob("**/kubepods"):
        for procs in root.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in procs.read_text().split())
    return sorted(pids)


def our_mounts() -> list[str]:
    """Mount points under the node's directories (kubelet volumes, container roots, netns)."""
    return [ln.split()[1] for ln in _read("/proc/self/mounts").splitlines() if _ours(ln.split()[1])]


def _ours(path: str) -> bool:
    return path.startswith(("/var/lib/kubelet", str(STATE), str(RUN), "/run/netns", "/var/run/netns"))


def own_processes() -> list[tuple[int, str]]:
    """Processes whose executable is one of ours (/opt/gpulab-node) or a container's (a runc
    child under our state), by PID."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            exe = os.readlink(f"/proc/{d}/exe")
        except OSError:
            continue
        if exe.startswith(str(OPT)) or exe.startswith(str(STATE)):
            out.append((int(d), exe))
    return out


# ---------------------------------------------------------------- main


FAKE_UUID = "GPU-00000000-0000-4000-8000-000000000000"


def fake_gpu() -> str:
    """The rehearsal's stand-ins for what a GPU host has: an nvidia-smi that prints the lab's
    H200 capture (placeholder UUID) and a CDI spec whose device mounts it into a container.
    They exercise the plugin, the kubelet's device manager, CDI injection by containerd and
    the lab's checks without a GPU; nothing of it is evidence about GPUs."""
    fake = RUN / "fake"
    fake.mkdir(parents=True, exist_ok=True)
    table = (HERE / "lab" / "gpulab" / "host" / "captures" / "h200-1gpu" / "nvidia-smi.txt").read_text()
    smi = fake / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f'  -L) echo "GPU 0: NVIDIA H200 (UUID: {FAKE_UUID})" ;;\n'
        f'  --query-gpu=*) echo "0, NVIDIA H200, {FAKE_UUID}, 580.159.04" ;;\n'
        f"  *) while IFS= read -r l; do echo \"$l\"; done <<'EOF'\n{table}EOF\n"
        "  ;;\nesac\n"
    )
    smi.chmod(0o755)
    edits = {
        "env": ["GPULAB_REHEARSAL_GPU=0"],
        "mounts": [
            {
                "hostPath": str(smi),
                "containerPath": "/usr/bin/nvidia-smi",
                "options": ["ro", "nosuid", "nodev", "bind"],
            }
        ],
    }
    CDI_DIR.mkdir(parents=True, exist_ok=True)
    CDI_SPEC.write_text(
        json.dumps(
            {
                "cdiVersion": "0.5.0",
                "kind": "nvidia.com/gpu",
                "devices": [{"name": n, "containerEdits": edits} for n in ("0", FAKE_UUID, "all")],
                "containerEdits": {},
            }
        )
    )
    shutil.copy(CDI_SPEC, WORK / "cdi-nvidia.json")
    return str(smi)


def rehearse(rendered: dict[str, Any], summary: dict[str, Any]) -> None:
    """Without a GPU (this project's own machines): the same flow with a plugin of one
    placeholder GPU (-fake-gpus) and a CDI spec that injects a stand-in nvidia-smi. The compute
    check is expected to fail (no libcuda): its failure is recorded, not raised."""
    smi = fake_gpu()
    with REC.step("device-plugin"):
        summary["secondsPluginToAllocatable"] = start_plugin(fake_gpus=1)
    try:
        positive(rendered, summary, smi)
    except RuntimeError as exc:
        if "compute check" not in str(exc):
            raise
        summary["rehearsalComputeFailure"] = str(exc)[:600]
        with contextlib.suppress(Exception):
            delete_pod("default", rendered["positive"]["compute"]["pod"]["metadata"]["name"])
    negative(rendered, summary)


# ---------------------------------------------------------------- the lab's own pulumi up

PULUMI_OPT = Path("/opt/gpulab-pulumi")


def lab_env(repo: Path, rehearsal: bool) -> dict[str, str]:
    """The environment of the lab's scripts on the node: the offline toolchain (unpacked by
    the first call from .devwork/pulumi, or this machine's own in a rehearsal), the program's
    Python packages, a backend and stack config of this run, the chart when one was carried."""
    env = dict(os.environ)
    env.update(
        {
            "GPULAB_STACK": "existing",
            "GPULAB_OFFLINE": "1",
            "GPULAB_CHOICE_QUIET": "1",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_BACKEND_URL": f"file://{STATE / 'pulumi'}",
            "PULUMI_CONFIG_PASSPHRASE": "gpulab-node-throwaway",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    env.pop("PYTHONPATH", None)  # the program is the checkout's, not the harness's lab copy
    if not rehearsal:
        env["GPULAB_CACHE"] = str(PULUMI_OPT / "cache")
        env["PYTHONPATH"] = str(PULUMI_OPT / "site")
        if (PULUMI_OPT / "gpu-operator" / "Chart.yaml").exists():
            env["GPULAB_CHART_PATH"] = str(PULUMI_OPT / "gpu-operator")
        # scripts/env.sh runs the program and the card with the checkout's .venv/bin/python:
        # the harness's interpreter, unless the checkout has a virtualenv of its own.
        if not (repo / ".venv" / "pyvenv.cfg").exists():
            python_wrapper(repo / ".venv" / "bin" / "python", sys.executable)
    (STATE / "pulumi").mkdir(parents=True, exist_ok=True)
    return env


def python_wrapper(dest: Path, python: str) -> None:
    """``dest``: a shell script that execs ``python`` as it is named (the machine's ``python3``
    is a virtualenv's). Not a symlink: Python finds its virtualenv from the path it is started
    by (``pyvenv.cfg`` beside or above it), so a link elsewhere starts the base interpreter
    without the virtualenv's packages (the 2026-12-03 run lost PyYAML, grpcio, protobuf)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.is_symlink() or dest.exists():
        dest.unlink()
    dest.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} "$@"\n')
    dest.chmod(0o755)


def lab_config_base(rehearsal: bool) -> dict[str, str]:
    """The existing variant on the node's kubeconfig and the harness's images."""
    return {
        "gpu-lab:kubeconfigPath": str(RUN / "conf" / "admin.kubeconfig"),
        "gpu-lab:kubeContext": "gpulab",
        "gpu-lab:expectedGpus": "1",
        "gpu-lab:smokeImage": IMAGES["smoke"],
        "gpu-lab:computeImage": IMAGES["compute"],
        "gpu-lab:dcgmExporter": "false",
        "gpu-lab:gpuGraceSeconds": "20",
        "gpu-lab:hostProbe": "off" if rehearsal else "nvidia-smi",
    }


def lab_config_extra() -> dict[str, str]:
    """The run's own keys: ``$GPULAB_NODE_LAB_CONFIG`` or .devwork/node/lab-config.json."""
    extra = os.environ.get("GPULAB_NODE_LAB_CONFIG") or str(HERE / "lab-config.json")
    if not Path(extra).exists():
        return {}
    return {
        str(k): str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in json.loads(Path(extra).read_text()).items()
    }


def lab_config(rehearsal: bool) -> dict[str, str]:
    """The stack's config: :func:`lab_config_base`, then the run's own keys
    (:func:`lab_config_extra`, e.g. the mode in which the lab finds the GPU stack installed)."""
    return {**lab_config_base(rehearsal), **lab_config_extra()}


class LabRun:
    """The lab's own commands on the node, from the checkout: each one's argv, rc, time and
    output tail in ``lab`` (summary["lab"]) and its whole output in ``lab-<name>.out``."""

    def __init__(self, summary: dict[str, Any], rehearsal: bool) -> None:
        self.repo = Path(os.environ.get("GPULAB_NODE_REPO") or Path.cwd()).resolve()
        self.rehearsal = rehearsal
        self.lab: dict[str, Any] = {"repo": str(self.repo)}
        summary["lab"] = self.lab
        self.env = lab_env(self.repo, rehearsal)
        cache = Path(self.env.get("GPULAB_CACHE") or Path.home() / ".cache" / "gpu-lab")
        self.pulumi = str(cache / "bin" / "pulumi")

    def run(
        self,
        name: str,
        argv: list[str],
        timeout: float,
        check: bool = False,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        t = now()
        try:
            p = subprocess.run(
                argv,
                cwd=self.repo,
                env={**self.env, **(env or {})},
                capture_output=True,
                text=True,
                timeout=budget(timeout),
                check=False,
            )
            rc, stdout, stderr = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as exc:
            rc = 124
            stdout = (
                exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
            )
            stderr = (
                exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
            ) + "\n[timed out]"
        (WORK / f"lab-{name}.out").write_text(
            f"$ {shlex.join(argv)}\n# rc={rc}\n{stdout}\n# stderr:\n{stderr}"
        )
        r: dict[str, Any] = {
            "argv": argv,
            "rc": rc,
            "seconds": round(now() - t, 3),
            "tail": (stdout + stderr)[-1500:],
        }
        self.lab[name] = r
        say(f"   {name}: rc {rc} in {r['seconds']:.1f}s")
        if check and rc != 0:
            raise RuntimeError(f"{name} exited {rc}: {r['tail'][-600:]}")
        return r

    def toolchain(self) -> None:
        """The CLI answers; on the GPU machine, the carried Kubernetes provider and the command
        stand-in installed as plugins."""
        self.run("pulumi-version", [self.pulumi, "version"], 30, check=True)
        if not self.rehearsal:
            k8s = next(
                PULUMI_OPT.glob("cache/pulumi/pulumi-resource-kubernetes-v*/bin/pulumi-resource-kubernetes")
            )
            version = k8s.parent.parent.name.rsplit("-", 1)[1]
            self.run(
                "plugin-kubernetes",
                [self.pulumi, "plugin", "install", "resource", "kubernetes", version, "--file", str(k8s)],
                120,
                check=True,
            )
            install = ["bash", "hack/offline/command/install.sh", self.pulumi]
            self.run("plugin-command", install, 60, check=True)

    def stack(self, stack: str, cfg: dict[str, str]) -> None:
        """Stack ``stack`` of the existing variant (stacks/existing.yaml's start) with ``cfg``."""
        shutil.copy(self.repo / "stacks" / "existing.yaml", self.repo / "stacks" / f"Pulumi.{stack}.yaml")
        self.run(
            f"stack-init-{stack}",
            ["scripts/pulumi", "stack", "init", stack, "--secrets-provider", "passphrase"],
            60,
            check=True,
        )
        self.lab[f"config-{stack}"] = cfg
        for k, v in cfg.items():
            self.run(
                f"config-{stack}-{k.split(':')[1]}",
                ["scripts/pulumi", "config", "set", "--stack", stack, k, v],
                30,
                check=True,
            )

    def keep(self, stack: str) -> None:
        """The stack's outputs and card (what `scripts/lab up` wrote) into the results."""
        for f in (
            f".state/outputs-{stack}.json",
            "baseline-card.md",
            "baseline-card.json",
            ".state/tflops.json",
        ):
            if (self.repo / f).exists():
                shutil.copy(self.repo / f, WORK / f"lab-{stack}-{Path(f).name}")

    def lab_cmd(self, name: str, stack: str, action: str, timeout: float) -> dict[str, Any]:
        """``scripts/lab <action>`` on ``stack`` (GPULAB_STACK picks it, as ``make`` does)."""
        return self.run(name, ["scripts/lab", action], timeout, env={"GPULAB_STACK": stack})


def lab_up(summary: dict[str, Any], rehearsal: bool = False) -> None:
    """The lab itself on the node (the final run): ``scripts/lab up`` of the existing variant
    (``pulumi up`` with the policy pack, then the card), the negative through ``scripts/lab
    verify``, the card the stack's outputs then make, and ``scripts/lab destroy``."""
    lr = LabRun(summary, rehearsal)
    repo, run = lr.repo, lr.run
    with REC.step("lab-toolchain"):
        lr.toolchain()
        cfg = lab_config(rehearsal)
        lr.lab["config"] = cfg
        lr.stack("existing", cfg)
    try:
        with REC.step("lab-up"):
            up = run("up", ["scripts/lab", "up"], 420)
            lr.keep("existing")
            if up["rc"] != 0:
                raise RuntimeError(f"scripts/lab up exited {up['rc']}: {up['tail'][-800:]}")
        with REC.step("lab-negative"):
            FAULT_FILE.write_text("all  # gpu-lab node harness: the negative test\n")
            wait_for("allocatable nvidia.com/gpu 0", lambda: gpu(node_doc()) == "0", 60)
            verify = run("verify-unhealthy", ["scripts/lab", "verify"], 300)
            if verify["rc"] == 0:
                raise RuntimeError("make verify passed on an unhealthy GPU")
            # What a card made now says: the stack keeps the outputs of the last successful up.
            outputs = run(
                "outputs-after-failed-verify",
                ["scripts/pulumi", "stack", "output", "--json", "--stack", "existing"],
                60,
            )
            doc = (WORK / "lab-outputs-after-failed-verify.out").read_text()
            (WORK / "lab-outputs-after-failed-verify.json").write_text(
                doc.split("\n", 2)[2].split("\n# stderr:")[0]
            )
            if outputs["rc"] == 0:
                py = str(repo / ".venv" / "bin" / "python") if not rehearsal else sys.executable
                failed = str(WORK / "lab-outputs-after-failed-verify.json")
                card = ["-m", "gpulab.verdict.card", "--outputs", failed]
                run(
                    "card-after-failed-verify",
                    [py, *card, "--out-dir", str(WORK / "card-after-failed-verify")],
                    60,
                )
            FAULT_FILE.unlink()
            wait_for("allocatable nvidia.com/gpu back to 1", lambda: gpu(node_doc()) == "1", 60)
    finally:
        with REC.step("lab-destroy"):
            run("destroy", ["scripts/lab", "destroy"], 240)
            (repo / "stacks" / "Pulumi.existing.yaml").unlink(missing_ok=True)


# ---------------------------------------------------------------- NVIDIA's device plugin chart

#: The stack the lab's second run uses on the same cluster while the release is installed, and
#: its own namespace: with the first stack's (labNamespace's default, gpu-lab) it would adopt
#: that namespace and delete it on destroy (rehearsed 2026-12-03: server-side apply creates
#: over an existing object without an error).
FOUND_STACK = "existing-found"
FOUND_NAMESPACE = "gpu-lab-found"
#: Node labels the lab-nvidia run records (GFD's and NFD's).
RECORDED_LABELS = (
    "nvidia.com/gpu.count", "nvidia.com/gpu.product", "nvidia.com/gpu.replicas",
    "nvidia.com/gpu.sharing-strategy", "nvidia.com/cuda.driver-version.full", "nvidia.com/gpu.present",
    "nvidia.com/gpu.memory", "nvidia.com/mig.capable", "feature.node.kubernetes.io/pci-10de.present",
)  # fmt: skip


def nvidia_lab_config(rehearsal: bool) -> dict[str, str]:
    """The stack config of ``lab-nvidia``: :func:`lab_config`'s, then NVIDIA's chart as the lab
    installs it (``gpuStack: device-plugin``, the chart unpacked from the module, the images made
    here, RuntimeClass nvidia, time-slicing in 4), then lab-config.json's keys."""
    images = nvidia_images()
    return {
        **lab_config_base(rehearsal),
        "gpu-lab:gpuStack": "device-plugin",
        "gpu-lab:devicePluginChartPath": str(NVIDIA_OPT / DP_RELEASE),
        "gpu-lab:devicePluginImage": images["nvidia-dp"],
        "gpu-lab:nfdImage": images["nfd"],
        "gpu-lab:runtimeClass": RUNTIME_CLASS,
        "gpu-lab:timeSlicingReplicas": "4",
        "gpu-lab:expectedGpus": "1",
        **lab_config_extra(),  # lab-config.json's keys win
    }


def dra_lab_config(rehearsal: bool) -> dict[str, str]:
    """The stack config of ``lab-dra``: :func:`lab_config`'s, then NVIDIA's DRA driver as the
    lab installs it (``gpuStack: dra``, the chart unpacked from the module, ``draDriverRoot`` where
    this machine's driver is), no benchmark Pod, the gate's timeout (``operatorTimeoutSeconds``,
    also the negative's bound: 120 s, 60 s in a rehearsal, where it must fail), then
    lab-config.json's keys. No image key: the chart's own reference names the harness's image
    (:func:`images`). No runtime class: the claims' devices reach the containers through the CDI
    specs the driver writes, which containerd applies itself."""
    return {
        **lab_config_base(rehearsal),
        "gpu-lab:gpuStack": "dra",
        "gpu-lab:draChartPath": str(DRA_OPT / DRA_RELEASE),
        "gpu-lab:draDriverRoot": DRA["driverRoot"],
        "gpu-lab:benchmarkPod": "false",
        "gpu-lab:operatorTimeoutSeconds": "60" if rehearsal else "120",
        "gpu-lab:expectedGpus": "1",
        **lab_config_extra(),
    }


def found_lab_config(rehearsal: bool) -> dict[str, str]:
    """The second stack's config: the same cluster, the GPU stack found installed."""
    return {
        **lab_config_base(rehearsal),
        "gpu-lab:gpuStack": "found",
        "gpu-lab:runtimeClass": RUNTIME_CLASS,
        "gpu-lab:labNamespace": FOUND_NAMESPACE,
    }


def namespaces() -> list[str]:
    _, core, _ = clients()
    return sorted(n.metadata.name for n in core.list_namespace().items)


def node_labels() -> dict[str, str]:
    return dict(((node_doc() or {}).get("metadata") or {}).get("labels") or {})


def chart_pods(namespace: str = DP_NAMESPACE) -> list[dict[str, Any]]:
    """The release namespace's Pods: name, phase, node, containers' ready/restarts/state."""
    api, core, _ = clients()
    out = []
    for p in core.list_namespaced_pod(namespace).items:
        doc = api.sanitize_for_serialization(p)
        st = doc.get("status") or {}
        out.append(
            {
                "name": doc["metadata"]["name"],
                "phase": st.get("phase"),
                "node": (doc.get("spec") or {}).get("nodeName"),
                "containers": {
                    c["name"]: {
                        "ready": c.get("ready"),
                        "restarts": c.get("restartCount"),
                        "state": c.get("state"),
                        "lastState": c.get("lastState"),
                    }
                    for c in (st.get("initContainerStatuses") or []) + (st.get("containerStatuses") or [])
                },
            }
        )
    return out


def chart_logs(tag: str, namespace: str = DP_NAMESPACE) -> None:
    """Every container log of the release's Pods (and the previous one's, after a restart)."""
    with contextlib.suppress(Exception):
        _, core, _ = clients()
        for p in core.list_namespaced_pod(namespace).items:
            names = [c.name for c in (p.spec.init_containers or []) + p.spec.containers]
            for c in names:
                for previous in (False, True):
                    with contextlib.suppress(Exception):
                        text = read_log(core, p.metadata.name, namespace, container=c, previous=previous)
                        suffix = "-previous" if previous else ""
                        (WORK / f"chart-{tag}-{p.metadata.name}-{c}{suffix}.log").write_text(text)
    save_json(f"chart-pods-{tag}.json", _safe(lambda: chart_pods(namespace)))
    save_json(f"events-{namespace}-{tag}.json", _safe(lambda: events(namespace)))


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        return f"<{type(exc).__name__}: {exc}>"


def node_state(tag: str) -> dict[str, Any]:
    """What the node advertises and wears now: allocatable/capacity nvidia.com/gpu, the labels
    of :data:`RECORDED_LABELS`, and every nvidia.com/ and feature.node.kubernetes.io/ label."""
    doc = node_doc()
    save_json(f"node-{tag}.json", doc)
    labels = dict(((doc or {}).get("metadata") or {}).get("labels") or {})
    return {
        "allocatable": gpu(doc),
        "capacity": gpu(doc, "capacity"),
        "labels": {k: labels.get(k) for k in RECORDED_LABELS},
        "nvidiaLabels": {k: v for k, v in labels.items() if k.startswith("nvidia.com/")},
        "nfdLabelCount": sum(k.startswith("feature.node.kubernetes.io/") for k in labels),
    }


def set_taint(on: bool) -> None:
    """Add or remove :data:`EVICT_TAINT` on the node (as ``kubectl taint`` does: the spec's
    taints, patched)."""
    api, core, _ = clients()
    node = core.read_node(NODE)
    taints = [api.sanitize_for_serialization(t) for t in (node.spec.taints or [])]
    taints = [t for t in taints if t.get("key") != EVICT_TAINT["key"]]
    if on:
        taints.append(dict(EVICT_TAINT))
    core.patch_node(NODE, {"spec": {"taints": taints}})


def found_stack(lr: LabRun, lab: dict[str, Any], rehearsal: bool) -> None:
    """Step (b) of ``lab-nvidia``: a second stack (``gpuStack: found``) up and destroyed on the
    same cluster while the release stays. Raises RuntimeError when either exits non-zero (on the
    GPU machine; the rehearsal records the exit codes: its check fails there too)."""
    with REC.step("lab-found-stack"):
        lab["namespacesBeforeFoundStack"] = _safe(namespaces)
        lr.stack(FOUND_STACK, found_lab_config(rehearsal))
        try:
            found = lr.lab_cmd("found-up", FOUND_STACK, "up", 300)
            lr.keep(FOUND_STACK)
        finally:
            gone = lr.lab_cmd("found-destroy", FOUND_STACK, "destroy", 180)
            (lr.repo / "stacks" / f"Pulumi.{FOUND_STACK}.yaml").unlink(missing_ok=True)
        lab["afterFoundStack"] = node_state("after-found-stack")
        lab["namespacesAfterFoundStack"] = _safe(namespaces)
        if rehearsal:  # its check fails there too: the rehearsal is of two stacks on one cluster
            lab["rehearsalFoundRcs"] = {"up": found["rc"], "destroy": gone["rc"]}
            return
        if found["rc"] != 0 or gone["rc"] != 0:
            raise RuntimeError(f"the found stack: up rc {found['rc']}, destroy rc {gone['rc']}")


def lab_up_nvidia(summary: dict[str, Any], rehearsal: bool = False) -> None:
    """``run.sh lab-nvidia``: the lab installs NVIDIA's device plugin chart on the node (no
    plugin of the harness's): (a) ``scripts/lab up`` with ``gpuStack: device-plugin``, the node's
    allocatable and GFD's labels recorded; (b) a second stack that finds the GPU stack installed
    (``gpuStack: found``), up and destroyed while the release stays; (c) ``scripts/lab verify``;
    (d) the negative: a NoExecute taint evicts the chart's Pods, allocatable drops, ``verify``
    must fail naming them; the taint removed, allocatable comes back; (e) ``scripts/lab
    destroy`` and a census of what is left (``leftovers``). Without a GPU (the rehearsal) the
    plugin and GFD cannot start (NVML): (a) must fail at the gate, (b) runs for its mechanics
    (two stacks on one cluster, its check failing too), then destroy and the census."""
    lr = lab_begin(summary, rehearsal, nvidia_lab_config)
    lab = lr.lab
    cfg = lab["config"]
    expected = str(int(cfg.get("gpu-lab:timeSlicingReplicas", "1")) * int(cfg["gpu-lab:expectedGpus"]))
    lab["expectedAllocatable"] = expected
    try:
        with REC.step("lab-up"):
            t = now()
            up = lab_up_once(lr, DP_NAMESPACE)
            lab["afterUp"] = node_state("after-up")
            lab["afterUp"]["pods"] = _safe(chart_pods)
            # No GPU: the plugin and GFD exit on NVML, so nothing advertises nvidia.com/gpu.
            up_verdict(lab, up, rehearsal)
            if not rehearsal and lab["afterUp"]["allocatable"] != expected:
                wait_for(f"allocatable nvidia.com/gpu {expected}", lambda: gpu(node_doc()) == expected, 60)
            lab["secondsUpToAllocatable"] = round(now() - t, 3)
        if os.environ.get("GPULAB_NODE_FOUND_STACK") == "skip":
            # Recorded on its own (lab-device-plugin-negative, 2026-12-03 15:23): skipping it
            # leaves the run's budget to the negative and destroy.
            lab["foundStack"] = "skipped (GPULAB_NODE_FOUND_STACK=skip)"
        else:
            found_stack(lr, lab, rehearsal)
        if rehearsal:
            return
        lab_verify(lr)
        with REC.step("lab-negative"):
            neg, t = taint_node(lab)
            wait_for(
                "allocatable nvidia.com/gpu gone", lambda: gpu(node_doc()) in (None, "0"), 120, interval=0.5
            )
            neg["secondsToAllocatableDrop"] = round(now() - t, 3)
            neg["whileTainted"] = node_state("tainted")
            neg["podsWhileTainted"] = _safe(chart_pods)
            verify = verify_tainted(lr, neg)
            t = now()
            set_taint(False)
            wait_for(
                f"allocatable nvidia.com/gpu back to {expected}", lambda: gpu(node_doc()) == expected, 180
            )
            neg["secondsToRecover"] = round(now() - t, 3)
            if verify["rc"] == 0:
                raise RuntimeError("scripts/lab verify passed with the device plugin's Pods evicted")
    finally:
        lab_end(lr, summary, DP_NAMESPACE, census_leftovers)


def lab_begin(summary: dict[str, Any], rehearsal: bool, config: Callable[[bool], dict[str, str]]) -> LabRun:
    """The lab's toolchain on the node and stack ``existing`` with ``config(rehearsal)``."""
    lr = LabRun(summary, rehearsal)
    with REC.step("lab-toolchain"):
        lr.toolchain()
        cfg = config(rehearsal)
        lr.lab["config"] = cfg
        lr.stack("existing", cfg)
    return lr


def lab_up_once(lr: LabRun, namespace: str) -> dict[str, Any]:
    """``scripts/lab up``, its outputs and card kept, the release's logs."""
    up = lr.lab_cmd("up", "existing", "up", 420)
    lr.keep("existing")
    chart_logs("after-up", namespace)
    return up


def up_verdict(lab: dict[str, Any], up: dict[str, Any], rehearsal: bool) -> None:
    """``scripts/lab up`` must pass on the GPU machine and fail in a rehearsal: without a GPU
    nothing of NVIDIA's stack can read NVML, so the lab's gate must fail there (what it said is
    in lab-up.out)."""
    if rehearsal:
        lab["rehearsalUpRc"] = up["rc"]
        if up["rc"] == 0:
            raise RuntimeError("scripts/lab up passed on a node without a GPU")
    elif up["rc"] != 0:
        raise RuntimeError(f"scripts/lab up exited {up['rc']}: {up['tail'][-800:]}")


def lab_verify(lr: LabRun) -> None:
    """``scripts/lab verify`` on the stack ``up`` made: it must pass."""
    with REC.step("lab-verify"):
        verify = lr.lab_cmd("verify", "existing", "verify", 240)
        if verify["rc"] != 0:
            raise RuntimeError(f"scripts/lab verify exited {verify['rc']}: {verify['tail'][-800:]}")


def taint_node(lab: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The negative begins: :data:`EVICT_TAINT` on the node; its record (``lab["negative"]``) and
    when it was set."""
    neg: dict[str, Any] = {"taint": EVICT_TAINT}
    lab["negative"] = neg
    t = now()
    set_taint(True)
    return neg, t


def verify_tainted(lr: LabRun, neg: dict[str, Any]) -> dict[str, Any]:
    """``scripts/lab verify`` during the negative, bounded so that destroy keeps its reserve: a
    verify that does not fail within its own bound is cut here, and destroy still runs (the
    15:23 run of lab-nvidia lost destroy that way)."""
    left = BUDGET - RESERVE - DESTROY_RESERVE - (time.monotonic() - T0)
    verify = lr.lab_cmd("verify-tainted", "existing", "verify", max(5.0, min(240.0, left)))
    neg["verifyRc"], neg["verifySeconds"] = verify["rc"], verify["seconds"]
    return verify


def lab_end(
    lr: LabRun, summary: dict[str, Any], namespace: str, census: Callable[[], dict[str, Any]]
) -> None:
    """The release's last logs, the taint gone, ``scripts/lab destroy`` and ``census()``."""
    chart_logs("end", namespace)
    with REC.step("lab-destroy"):
        with contextlib.suppress(Exception):
            set_taint(False)
        lr.lab_cmd("destroy", "existing", "destroy", 240)
        (lr.repo / "stacks" / "Pulumi.existing.yaml").unlink(missing_ok=True)
        summary.setdefault("leftovers", {})["cluster"] = census()


# ---------------------------------------------------------------- NVIDIA's DRA driver


def dra_slices() -> list[dict[str, Any]]:
    """The DRA driver's ResourceSlices (``spec.driver`` gpu.nvidia.com), as the API serves them."""
    from kubernetes import client

    api, _, _ = clients()
    items = client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")
    return [i for i in items["items"] if (i.get("spec") or {}).get("driver") == DRA_DRIVER]


def plugin_files() -> list[str]:
    """What is in the kubelet's plugin registration and plugin directories (sockets, the
    driver's checkpoint, the nvidia-cdi-hook it copied there)."""
    return sorted(str(p) for d in KUBELET_PLUGIN_DIRS if d.is_dir() for p in d.rglob("*"))


def driver_cdi_specs() -> list[str]:
    """The CDI specs the DRA driver wrote (its vendor k8s.gpu.nvidia.com) in /var/run/cdi."""
    return sorted(str(p) for p in CDI_DIR.glob(f"{DRA_CDI_VENDOR}*")) if CDI_DIR.is_dir() else []


def dra_state(tag: str) -> dict[str, Any]:
    """The driver's slices (saved whole; per node its GPUs with their UUIDs), the kubelet's
    plugin files and the driver's CDI specs."""
    from gpulab.kube.dra import slice_rows

    slices = _safe(dra_slices)
    save_json(f"resourceslices-{tag}.json", slices)
    return {
        "slices": list(slice_rows(slices, DRA_DRIVER).values()) if isinstance(slices, list) else slices,
        "pluginFiles": _safe(plugin_files),
        "driverCdiSpecs": _safe(driver_cdi_specs),
    }


UUID_RE = re.compile(r"\bGPU-[0-9a-fA-F-]{36}\b")


def dra_claims(lr: LabRun) -> dict[str, Any]:
    """The claims the lab's Pods ran through: each Pod with ``spec.resourceClaims`` (its
    ``status.resourceClaimStatuses``, phase and the UUIDs its log lists), the ResourceClaims
    still there (``status.allocation``; a claim made from a template is deleted once its Pod is
    done), the smoke check's own record of its claim as allocated and reserved (the stack's
    ``dra`` output), and the UUIDs compared: the Pods' against the host's ``nvidia-smi`` and the
    slices'."""
    from kubernetes import client

    api, core, _ = clients()
    pods = []
    for p in core.list_pod_for_all_namespaces().items:
        if not p.spec.resource_claims:
            continue
        doc = api.sanitize_for_serialization(p)
        log: Any = _safe(partial(read_log, core, p.metadata.name, p.metadata.namespace))
        pods.append(
            {
                "namespace": p.metadata.namespace,
                "name": p.metadata.name,
                "phase": p.status.phase,
                "resourceClaims": doc["spec"].get("resourceClaims"),
                "resourceClaimStatuses": (doc.get("status") or {}).get("resourceClaimStatuses"),
                "uuids": sorted(set(UUID_RE.findall(log))) if isinstance(log, str) else log,
            }
        )
        (WORK / f"pod-{p.metadata.namespace}-{p.metadata.name}.log").write_text(str(log))
    claims = _safe(
        lambda: client.CustomObjectsApi(api).list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceclaims"
        )
    )
    save_json("resourceclaims-after-up.json", claims)
    outputs = _safe(lambda: json.loads((lr.repo / ".state" / "outputs-existing.json").read_text()))
    host = sorted(g["uuid"] for g in host_gpus())
    published = sorted(d["uuid"] for r in dra_state("claims")["slices"] for d in r["devices"])
    seen = sorted({u for p in pods if isinstance(p["uuids"], list) for u in p["uuids"]})
    return {
        "pods": pods,
        "claimsLeft": [
            {"name": c["metadata"]["name"], "allocation": (c.get("status") or {}).get("allocation")}
            for c in (claims.get("items") or [])
        ] if isinstance(claims, dict) else claims,
        "labDraOutput": outputs.get("dra") if isinstance(outputs, dict) else outputs,
        "allocationPath": outputs.get("allocationPath") if isinstance(outputs, dict) else None,
        "hostUuids": host,
        "sliceUuids": published,
        "podUuids": seen,
        "uuidsMatch": bool(seen) and set(seen) <= set(host) and set(seen) <= set(published),
    }  # fmt: skip


def census_dra() -> dict[str, Any]:
    """What the lab's destroy left of NVIDIA's DRA driver: :func:`census_objects` for the release
    (its namespace, DaemonSet, ServiceAccounts, ClusterRoles and bindings; the chart's
    ComputeDomain CRDs, which Helm leaves), and the DRA objects: DeviceClasses, the driver's
    ResourceSlices, ResourceClaims and templates anywhere, the chart's ValidatingAdmissionPolicy
    and binding; on the node, the CDI specs the driver wrote and the kubelet's plugin files."""
    from kubernetes import client

    api, _, _ = clients()
    custom, adm = client.CustomObjectsApi(api), client.AdmissionregistrationV1Api(api)
    out = census_objects(DRA_NAMESPACE, ("dra-driver-nvidia-gpu", "nvidia"), "nvidia.com")

    def names(plural: str) -> list[str]:
        items = custom.list_cluster_custom_object("resource.k8s.io", "v1", plural)["items"]
        return sorted(
            "/".join(filter(None, (i["metadata"].get("namespace"), i["metadata"]["name"]))) for i in items
        )

    checks: dict[str, Callable[[], Any]] = {
        "deviceClasses": lambda: names("deviceclasses"),
        "resourceSlices": lambda: [s["metadata"]["name"] for s in dra_slices()],
        "resourceClaims": lambda: names("resourceclaims"),
        "resourceClaimTemplates": lambda: names("resourceclaimtemplates"),
        "validatingAdmissionPolicies": lambda: sorted(
            p.metadata.name
            for p in adm.list_validating_admission_policy().items
            if "dra-driver" in p.metadata.name
        ),
        "validatingAdmissionPolicyBindings": lambda: sorted(
            p.metadata.name
            for p in adm.list_validating_admission_policy_binding().items
            if "dra-driver" in p.metadata.name
        ),
        "driverCdiSpecs": driver_cdi_specs,
        "pluginFiles": plugin_files,
    }
    out |= {key: _safe(fn) for key, fn in checks.items()}
    save_json("leftovers-cluster.json", out)
    return out


def lab_up_dra(summary: dict[str, Any], rehearsal: bool = False) -> None:
    """``run.sh lab-dra``: the lab installs NVIDIA's DRA driver chart on the node (no device
    plugin at all): (a) ``scripts/lab up`` with ``gpuStack: dra``, then the driver's ResourceSlices
    (the GPU with its UUID), the claims the smoke and compute Pods ran through and their UUIDs
    against the host's (``claims``); (b) ``scripts/lab verify``; (c) the negative: a NoExecute
    taint evicts the kubelet plugin's Pods, the kubelet wipes the driver's slices (30 s after the
    plugin unregistered: pkg/kubelet/cm/dra defaultWipingDelay), ``verify`` must fail (the
    dra-gate: no slice); the taint removed, the slice comes back; (d) ``scripts/lab destroy`` and
    a census of what is left. Without a GPU (the rehearsal) the kubelet plugin fails on NVML: (a)
    must fail at the dra-gate, then destroy and the census."""
    lr = lab_begin(summary, rehearsal, dra_lab_config)
    lab = lr.lab
    lab["dra"] = DRA
    try:
        with REC.step("lab-up"):
            up = lab_up_once(lr, DRA_NAMESPACE)
            lab["afterUp"] = dra_state("after-up")
            lab["afterUp"]["pods"] = _safe(lambda: chart_pods(DRA_NAMESPACE))
            up_verdict(lab, up, rehearsal)
        if rehearsal:
            return
        with REC.step("lab-claims"):
            lab["claims"] = claims = dra_claims(lr)
            if not claims["uuidsMatch"]:
                raise RuntimeError(f"the Pods' GPUs are not the host's and the slice's: {claims['podUuids']}")
        lab_verify(lr)
        with REC.step("lab-negative"):
            neg, t = taint_node(lab)
            wait_for("the driver's ResourceSlices gone", lambda: not dra_slices(), 120, interval=1)
            neg["secondsToSlicesGone"] = round(now() - t, 3)
            neg["whileTainted"] = dra_state("tainted")
            neg["podsWhileTainted"] = _safe(lambda: chart_pods(DRA_NAMESPACE))
            verify = verify_tainted(lr, neg)
            t = now()
            set_taint(False)
            wait_for("the driver's ResourceSlice back", dra_slices, 180, interval=1)
            neg["secondsToRecover"] = round(now() - t, 3)
            if verify["rc"] == 0:
                raise RuntimeError("scripts/lab verify passed with the DRA driver's kubelet plugin evicted")
    finally:
        lab_end(lr, summary, DRA_NAMESPACE, census_dra)


def census_leftovers() -> dict[str, Any]:
    """What the lab's destroy left of NVIDIA's stack: the release's objects (its namespace,
    DaemonSets, ConfigMaps, ServiceAccounts, ClusterRoles and bindings named nvidia/nfd/
    node-feature-discovery), NFD's CRDs (Helm leaves a chart's crds/), NodeFeature objects,
    the node's labels from NFD and GFD, GFD's features.d files, the RuntimeClass, the
    containerd config's nvidia runtime, the CDI specs (the last three the harness's own)."""
    from kubernetes import client

    api, _, _ = clients()
    out = census_objects(
        DP_NAMESPACE, ("nvidia", "nfd", "node-feature-discovery", "gpu-feature-discovery"), "nfd"
    )
    out["nodeFeatures"] = _safe(
        lambda: [
            f"{i['metadata']['namespace']}/{i['metadata']['name']}"
            for i in client.CustomObjectsApi(api).list_cluster_custom_object(
                "nfd.k8s-sigs.io", "v1alpha1", "nodefeatures"
            )["items"]
        ]
    )
    labels = out["nodeLabels"]
    if isinstance(labels, list):
        annotations = ((node_doc() or {}).get("metadata") or {}).get("annotations") or {}
        out["nodeAnnotations"] = sorted(k for k in annotations if "nfd" in k)
    out["featuresD"] = sorted(str(p) for p in FEATURES_D.glob("*")) if FEATURES_D.is_dir() else []
    save_json("leftovers-cluster.json", out)
    return out


def census_objects(namespace: str, words: Sequence[str], crd_word: str) -> dict[str, Any]:
    """What is left in the cluster and on the node of a chart's release: its ``namespace``; the
    DaemonSets, Deployments, ConfigMaps, ServiceAccounts, ClusterRoles and bindings named with
    one of ``words``; CRDs named with ``crd_word``; the RuntimeClasses; the node's nvidia.com/ and
    feature.node.kubernetes.io/ labels; containerd's nvidia runtime and the CDI specs (the last
    three the harness's own node setup, listed for completeness)."""
    from kubernetes import client

    api, core, apps = clients()

    def named(items: Any) -> list[str]:
        return sorted(i.metadata.name for i in items if any(w in i.metadata.name for w in words))

    rbac = client.RbacAuthorizationV1Api(api)
    ext = client.ApiextensionsV1Api(api)
    checks: dict[str, Callable[[], Any]] = {
        "namespace": lambda: [
            n.metadata.name for n in core.list_namespace().items if n.metadata.name == namespace
        ],
        "daemonSets": lambda: named(apps.list_daemon_set_for_all_namespaces().items),
        "deployments": lambda: named(apps.list_deployment_for_all_namespaces().items),
        "configMaps": lambda: named(core.list_config_map_for_all_namespaces().items),
        "serviceAccounts": lambda: named(core.list_service_account_for_all_namespaces().items),
        "clusterRoles": lambda: named(rbac.list_cluster_role().items),
        "clusterRoleBindings": lambda: named(rbac.list_cluster_role_binding().items),
        "crds": lambda: sorted(
            c.metadata.name
            for c in ext.list_custom_resource_definition().items
            if crd_word in c.metadata.name
        ),
        "runtimeClasses": lambda: [r.metadata.name for r in client.NodeV1Api(api).list_runtime_class().items],
        "nodeLabels": lambda: sorted(
            f"{k}={v}"
            for k, v in node_labels().items()
            if k.startswith(("nvidia.com/", "feature.node.kubernetes.io/"))
        ),
    }
    out = {key: _safe(fn) for key, fn in checks.items()}
    out["containerdNvidiaRuntime"] = (
        "runtimes.nvidia" in CONTAINERD_DROP_IN.read_text() if CONTAINERD_DROP_IN.exists() else False
    )
    out["cdiSpecs"] = sorted(str(p) for p in CDI_DIR.glob("*")) if CDI_DIR.is_dir() else []
    return out


#: The rehearsal's stand-in for the NVIDIA PCI device NFD would find: the label the chart's
#: DaemonSets accept a node by (values.yaml affinity), set by hand; never on the GPU machine.
REHEARSAL_NODE_LABELS = {"nvidia.com/gpu.present": "true"}


def chart_values() -> dict[str, Any]:
    """``rehearse-chart-nvidia``'s values for NVIDIA's chart: what the lab sets
    (components/device_plugin.py helm_values: GFD and NFD on, the images made here,
    RuntimeClass nvidia, time-slicing in 4 through the chart's config map). Nothing else: GFD
    v0.19.0 publishes its labels as a NodeFeature object (``--use-node-feature-api``, default
    true), which nfd-master applies at once, so NFD's worker interval (60 s) is not waited on."""
    images = nvidia_images()
    dp_repo, dp_tag = images["nvidia-dp"].rsplit(":", 1)
    nfd_repo, nfd_tag = images["nfd"].rsplit(":", 1)
    sharing = "\n".join(
        [
            "version: v1",
            "sharing:",
            "  timeSlicing:",
            "    resources:",
            "    - name: nvidia.com/gpu",
            "      replicas: 4",
            "",
        ]
    )
    return {
        "gfd": {"enabled": True},
        "nfd": {"enabled": True, "image": {"repository": nfd_repo, "tag": nfd_tag}},
        "migStrategy": "none",
        "runtimeClassName": RUNTIME_CLASS,
        "image": {"repository": dp_repo, "tag": dp_tag},
        "config": {"map": {"default": sharing}, "default": "default"},
    }


def _pod_ready(pod: dict[str, Any]) -> bool:
    cs = pod["containers"]
    return (
        pod["phase"] == "Running"
        and bool(cs)
        and all(c["ready"] for c in cs.values() if c["ready"] is not None)
    )


def nfd_ready() -> bool:
    """NFD's master, worker and gc each have a Ready Pod."""
    pods = [p for p in chart_pods() if "node-feature-discovery" in p["name"]]
    roles = {r for r in ("master", "worker", "gc") for p in pods if f"-{r}-" in p["name"] and _pod_ready(p)}
    return roles == {"master", "worker", "gc"}


def chart_by_helm(summary: dict[str, Any]) -> None:
    """``rehearse-chart-nvidia``: NVIDIA's chart installed by helm (``$GPULAB_NODE_HELM``, else
    helm on PATH) with :func:`chart_values`, as the lab would install it, where the lab's own
    ``gpuStack: device-plugin`` cannot run: NFD's master, worker and gc must run Ready (in-cluster
    config through the ``kubernetes`` Service, their CRDs, RBAC, the worker's NodeFeature and
    the master's labels); the plugin and GFD start under NVIDIA's runtime and fail without a GPU
    (NVML): recorded. Then ``helm uninstall`` and the census of what is left."""
    helm = os.environ.get("GPULAB_NODE_HELM") or shutil.which("helm") or "helm"
    kc = str(RUN / "conf" / "admin.kubeconfig")
    values = chart_values()
    save_json("chart-values.json", values)
    ch: dict[str, Any] = {"values": values}
    summary["chart"] = ch
    base = [helm, "--kubeconfig", kc, "--namespace", DP_NAMESPACE]
    try:
        with REC.step("chart-install"):
            t = now()
            sh(
                [*base, "upgrade", "--install", DP_RELEASE, str(NVIDIA_OPT / DP_RELEASE),
                 "--create-namespace", "-f", str(WORK / "chart-values.json")],
                name="helm-install",
                timeout=budget(180),
            )  # fmt: skip
            ch["secondsInstall"] = round(now() - t, 3)
        with REC.step("chart-nfd-ready"):
            t = now()

            wait_for("NFD master, worker and gc Ready", nfd_ready, 180, interval=1)
            ch["secondsToNfdReady"] = round(now() - t, 3)
            wait_for(
                "NFD's labels on the node",
                lambda: any(k.startswith("feature.node.kubernetes.io/") for k in node_labels()),
                120,
                interval=1,
            )
            ch["secondsToNfdLabels"] = round(now() - t, 3)
        with REC.step("chart-plugin-and-gfd"):
            t = now()

            def failed_or_ready() -> bool:
                pods = [p for p in chart_pods() if "node-feature-discovery" not in p["name"]]
                if len(pods) < 2:
                    return False
                for p in pods:
                    cs = p["containers"]
                    crashed = any(c["restarts"] or (c["state"] or {}).get("terminated") for c in cs.values())
                    if not (crashed or _pod_ready(p)):
                        return False
                return True

            with contextlib.suppress(TimeoutError):
                wait_for(
                    "the plugin's and GFD's Pods started (and failed, without a GPU)", failed_or_ready, 150, 2
                )
            ch["secondsPluginAndGfd"] = round(now() - t, 3)
        ch["pods"] = chart_pods()
        ch["node"] = node_state("chart")
        chart_logs("chart")
        save_json("nodefeatures.json", _safe(_node_features))
        with REC.step("chart-taint"):
            # lab-nvidia's negative without the allocatable part: the taint evicts every Pod
            # of the chart (DaemonSets' and NFD's Deployments'), and they come back without it.
            t = now()
            set_taint(True)
            wait_for(
                "the chart's Pods evicted",
                lambda: not [p for p in chart_pods() if p["phase"] == "Running"],
                120,
                1,
            )
            ch["secondsTaintToEvicted"] = round(now() - t, 3)
            ch["podsWhileTainted"] = chart_pods()
            t = now()
            set_taint(False)
            wait_for("NFD master, worker and gc Ready again", nfd_ready, 180, interval=1)
            ch["secondsUntaintToNfdReady"] = round(now() - t, 3)
    finally:
        with REC.step("chart-uninstall"):
            t = now()
            sh([*base, "uninstall", DP_RELEASE, "--wait", "--timeout", "120s"], name="helm-uninstall",
               timeout=150, check=False)  # fmt: skip
            ch["secondsUninstall"] = round(now() - t, 3)
            summary.setdefault("leftovers", {})["cluster"] = census_leftovers()


def _node_features() -> Any:
    from kubernetes import client

    api, _, _ = clients()
    return client.CustomObjectsApi(api).list_cluster_custom_object(
        "nfd.k8s-sigs.io", "v1alpha1", "nodefeatures"
    )


#: The modes with NVIDIA's device plugin chart instead of the harness's plugin.
NVIDIA_MODES = ("lab-nvidia", "rehearse-lab-nvidia", "rehearse-chart-nvidia")
#: The modes with NVIDIA's DRA driver chart and no device plugin at all.
DRA_MODES = ("lab-dra", "rehearse-lab-dra")
MODES = ("whole", "fleet", "lab", "rehearse", "rehearse-fleet", "rehearse-lab", *NVIDIA_MODES, *DRA_MODES)


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "whole"
    if mode not in MODES:
        print(f"node.py: unknown mode {mode!r} (one of {', '.join(MODES)})", file=sys.stderr)
        return 2
    gpu_host = not mode.startswith("rehearse")
    nvidia, dra = mode in NVIDIA_MODES, mode in DRA_MODES
    if nvidia or dra:  # the charts' Pods use in-cluster config
        use_in_cluster_network()
    WORK.mkdir(parents=True, exist_ok=True)
    rendered = json.loads((HERE / "rendered.json").read_text())
    summary: dict[str, Any] = {
        "mode": mode,
        "node": NODE,
        "images": IMAGES,
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    rc = 1
    try:
        with REC.step("machine"):
            clean_start()
            machine_facts()
        with REC.step("unpack"):
            unpack()
            if nvidia:
                unpack_nvidia()
            if dra:
                unpack_dra()
            python_site()
        if gpu_host:
            with REC.step("cgroups"):
                cgroups()
            with REC.step("cdi"):
                cdi()
        with REC.step("network"):
            ip = node_ip()
            summary["nodeIP"] = ip
        with REC.step("control-plane"):
            control_plane(ip)
        if (nvidia or dra) and not gpu_host:
            fake_gpu()  # the CDI spec NVIDIA's runtime resolves nvidia.com/gpu=all in
        if dra:
            with REC.step("dra-mounts"):
                # The driver root the lab gives the chart, and the kubelet's plugin directory
                # and the driver root's parent on shared mounts (shared_mount says why).
                DRA["driverRoot"] = dra_driver_root(gpu_host)
                parent = Path(DRA["driverRoot"]).parent
                DRA["sharedMounts"] = [
                    shared_mount(p) for p in (KUBELET_DIR, parent, Path(DRA["driverRoot"]))
                ]
        with REC.step("containerd"):
            containerd(nvidia or dra)
        with REC.step("images"):
            images(gpu_host, nvidia, dra)
        fleet_mode = mode in ("fleet", "rehearse-fleet")
        if fleet_mode:
            PLUGIN_LABELS.update(FLEET_PLUGIN_LABELS)
        with REC.step("kubelet"):
            kubelet(ip, FLEET_NODE_LABELS if fleet_mode else DRA_NODE_LABELS if dra else None)
            wait_node_ready()
        if dra:
            with REC.step("runtime-class"):
                runtime_class()
            with REC.step("api-probe"):
                summary["apiProbe"] = api_probe()
        if nvidia:
            with REC.step("runtime-class"):
                runtime_class()
            with REC.step("api-probe"):
                summary["apiProbe"] = api_probe()
            if gpu_host:
                with REC.step("nvml-probe"):
                    summary["nvmlProbe"] = nvml_probe()
            if not gpu_host:
                # No NVIDIA PCI device here: NFD cannot label one, and the chart's DaemonSets
                # schedule only where a label says there is (their nodeAffinity). A stand-in,
                # like the rehearsal's fake CDI spec; never on the GPU machine.
                with REC.step("rehearsal-node-label"):
                    clients()[1].patch_node(NODE, {"metadata": {"labels": REHEARSAL_NODE_LABELS}})
                    summary["rehearsalNodeLabels"] = REHEARSAL_NODE_LABELS
        if mode == "rehearse-chart-nvidia":
            chart_by_helm(summary)
        elif nvidia:
            lab_up_nvidia(summary, rehearsal=not gpu_host)
        elif dra:
            lab_up_dra(summary, rehearsal=not gpu_host)
        elif fleet_mode:
            smi = "nvidia-smi" if gpu_host else fake_gpu()
            with REC.step("device-plugin"):
                summary["secondsPluginToAllocatable"] = start_plugin(fake_gpus=0 if gpu_host else 1)
            summary["pluginLabels"] = PLUGIN_LABELS
            try:
                fleet_positive(rendered, summary, smi)
            except RuntimeError as exc:
                # Without a GPU (no libcuda) the chapter's compute check fails: recorded, not raised.
                if gpu_host or "compute check" not in str(exc):
                    raise
                summary["rehearsalComputeFailure"] = str(exc)[:600]
                with contextlib.suppress(Exception):
                    comp = rendered["fleet"]["positive"]["compute"]["pod"]["metadata"]
                    delete_pod(comp["namespace"], comp["name"])
            fleet_negative(rendered, summary)
        elif mode in ("lab", "rehearse-lab"):
            if not gpu_host:
                fake_gpu()
            with REC.step("device-plugin"):
                summary["secondsPluginToAllocatable"] = start_plugin(fake_gpus=0 if gpu_host else 1)
            lab_up(summary, rehearsal=not gpu_host)
        elif not gpu_host:
            rehearse(rendered, summary)
        else:
            with REC.step("device-plugin"):
                summary["secondsPluginToAllocatable"] = start_plugin()
            positive(rendered, summary)
            negative(rendered, summary)
        rc = 0
    except BaseException as exc:
        summary["failure"] = f"{type(exc).__name__}: {exc}"
        plugin_log("device-plugin-at-failure")
        if nvidia or dra:
            chart_logs("at-failure", DRA_NAMESPACE if dra else DP_NAMESPACE)
        with contextlib.suppress(Exception):
            save_json("node-at-failure.json", node_doc())
            save_json("events-at-failure.json", events("default") + events(PLUGIN_NS))
            _, core, _ = clients()
            for p in core.list_pod_for_all_namespaces().items:
                (WORK / f"pod-{p.metadata.namespace}-{p.metadata.name}.describe.json").write_text(
                    json.dumps(core.api_client.sanitize_for_serialization(p), indent=1, default=str)
                )
    finally:
        with contextlib.suppress(BaseException), REC.step("teardown"):
            teardown(summary)
        summary["steps"] = REC.steps
        summary["seconds"] = now()
        summary["ok"] = rc == 0
        (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
        say(f"done: rc {rc}")
        shutil.copy(WORK / "harness.log", OUT / "harness.log")
        with tarfile.open(OUT / "work.tar.gz", "w:gz") as t:
            t.add(WORK, arcname="work")
        shutil.rmtree(WORK, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
