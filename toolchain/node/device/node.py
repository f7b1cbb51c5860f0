#!/usr/bin/env python3
"""The real-node harness on the lent GPU machine: one Kubernetes node, the lab's checks, a negative.

Workplace only (toolchain/node; README.md there). Run as root on the GPU machine from the
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
API = "https://127.0.0.1:6443"
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
#: The node's pool label in the fleet mode (toolchain/node/render.py POOL_LABEL, POOL), set by
#: the kubelet (--node-labels) as a node pool's nodes get theirs.
FLEET_NODE_LABELS = {"gpulab.dev/node-pool": "h200"}
IMAGES = {
    "pause": "gpulab.local/gpulab-pause:1",
    "plugin": "gpulab.local/gpulab-device-plugin:1",
    "smoke": "gpulab.local/node-smoke:1",
    "compute": "gpulab.local/vectoradd:1",
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
REQUIRED_BINARIES = (
    "gpulab-kube", "etcd", "gpulab-containerd", "containerd-shim-runc-v2", "runc", "nvidia-ctk",
    "bridge", "host-local", "loopback", "gpulab-device-plugin", "gpulab-pause", "gpulab-vectoradd",
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
    for d in (STATE, RUN, Path("/var/lib/kubelet"), Path("/var/lib/cni/networks/gpulab"), CDI_SPEC):
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
        ],
        name="cdi-generate",
        timeout=60,
    )
    sh([str(BIN / "nvidia-ctk"), "cdi", "list", f"--spec-dir={CDI_DIR}"], name="cdi-list", check=False)
    shutil.copy(CDI_SPEC, WORK / "cdi-nvidia.json")


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
                        "ranges": [[{"subnet": "10.88.0.0/16"}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                }
            ],
        },
        indent=1,
    )


def kubeconfig(user: str, server: str = API) -> str:
    """A kubeconfig for ``user`` (pki/<user>.crt/.key), everything embedded."""

    def b64(name: str) -> str:
        return base64.b64encode((PKI / name).read_bytes()).decode()

    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "gpulab", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}
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
            "--secure-port=6443",
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
            "--service-cluster-ip-range=10.96.0.0/16",
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
    with urllib.request.urlopen(API + path, context=ctx, timeout=3) as r:
        return r.read().decode()


def containerd() -> None:
    """containerd with runc as the default runtime, CDI (always on in containerd 2.x;
    cdi_spec_dirs as upstream's default), the CNI config above, the harness's pause image."""
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


def images(gpu_host: bool = True) -> None:
    """The four images, made from this machine's files (image.py) and imported: the sandbox
    (gpulab-pause), the device plugin (its binary and the libraries it and libnvidia-ml need),
    the smoke image (a shell and the C library; nvidia-smi comes from the CDI spec), the
    compute image (gpulab-vectoradd, also at :data:`VECTORADD_PATH`, a shell, and what libcuda
    needs; libcuda and nvidia-smi come from the CDI spec)."""
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
            "--add", "/bin/sh=/bin/sh", "--libs-of", smi, "--env", path_env, "--env", ld_env, "--cmd", "sh",
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
    for key, args in specs.items():
        tar = d / f"{key}.tar"
        sh(
            [sys.executable, str(HERE / "image.py"), "--name", IMAGES[key], "--out", str(tar), *args],
            name=f"image-{key}",
        )
        ctr("images", "import", "--platform", "linux/amd64", str(tar), name=f"import-{key}")
    ctr("images", "ls", name="images-ls")


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
        "clusterDNS": ["10.96.0.10"],
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
    return {c: core.read_namespaced_pod_log(pod, namespace, container=c) for c in containers}


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
            (WORK / f"{name}.log").write_text(core.read_namespaced_pod_log(p.metadata.name, PLUGIN_NS))


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
    summary["leftovers"] = {
        "processes": [f"{pid} {exe}" for pid, exe in own_processes()],
        "mounts": our_mounts(),
        "kubepodsCgroup": kubepods.exists() or any(Path("/sys/fs/cgroup").glob("*/kubepods")),
        "podProcesses": pod_processes(),
        # No `ip` here to delete it: the bridge stays until the machine goes back.
        "cni0": "cni0" in os.listdir("/sys/class/net"),
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
                "devices": [{"name": n, "containerEdits": edits} for n in ("0", FAKE_UUID)],
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


def lab_config(rehearsal: bool) -> dict[str, str]:
    """The stack's config: the existing variant on the node's kubeconfig and the harness's
    images, then the run's own keys (``$GPULAB_NODE_LAB_CONFIG`` or .devwork/node/lab-config.json,
    e.g. the mode in which the lab finds the GPU stack installed)."""
    cfg = {
        "gpu-lab:kubeconfigPath": str(RUN / "conf" / "admin.kubeconfig"),
        "gpu-lab:kubeContext": "gpulab",
        "gpu-lab:expectedGpus": "1",
        "gpu-lab:smokeImage": IMAGES["smoke"],
        "gpu-lab:computeImage": IMAGES["compute"],
        "gpu-lab:dcgmExporter": "false",
        "gpu-lab:gpuGraceSeconds": "20",
        "gpu-lab:hostProbe": "off" if rehearsal else "nvidia-smi",
    }
    extra = os.environ.get("GPULAB_NODE_LAB_CONFIG") or str(HERE / "lab-config.json")
    if Path(extra).exists():
        cfg.update(
            {
                str(k): str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in json.loads(Path(extra).read_text()).items()
            }
        )
    return cfg


def lab_up(summary: dict[str, Any], rehearsal: bool = False) -> None:
    """The lab itself on the node (the final run): ``scripts/lab up`` of the existing variant
    (``pulumi up`` with the policy pack, then the card), the negative through ``scripts/lab
    verify``, the card the stack's outputs then make, and ``scripts/lab destroy``."""
    repo = Path(os.environ.get("GPULAB_NODE_REPO") or Path.cwd()).resolve()
    lab: dict[str, Any] = {"repo": str(repo)}
    summary["lab"] = lab
    env = lab_env(repo, rehearsal)
    pulumi = str(Path(env.get("GPULAB_CACHE") or Path.home() / ".cache" / "gpu-lab") / "bin" / "pulumi")

    def run(name: str, argv: list[str], timeout: float, check: bool = False) -> dict[str, Any]:
        t = now()
        try:
            p = subprocess.run(
                argv, cwd=repo, env=env, capture_output=True, text=True, timeout=budget(timeout), check=False
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
        lab[name] = r
        say(f"   {name}: rc {rc} in {r['seconds']:.1f}s")
        if check and rc != 0:
            raise RuntimeError(f"{name} exited {rc}: {r['tail'][-600:]}")
        return r

    with REC.step("lab-toolchain"):
        run("pulumi-version", [pulumi, "version"], 30, check=True)
        if not rehearsal:
            k8s = next(
                PULUMI_OPT.glob("cache/pulumi/pulumi-resource-kubernetes-v*/bin/pulumi-resource-kubernetes")
            )
            version = k8s.parent.parent.name.rsplit("-", 1)[1]
            run(
                "plugin-kubernetes",
                [pulumi, "plugin", "install", "resource", "kubernetes", version, "--file", str(k8s)],
                120,
                check=True,
            )
            run("plugin-command", ["bash", "toolchain/command/install.sh", pulumi], 60, check=True)
        shutil.copy(repo / "stacks" / "existing.yaml", repo / "stacks" / "Pulumi.existing.yaml")
        run(
            "stack-init",
            ["scripts/pulumi", "stack", "init", "existing", "--secrets-provider", "passphrase"],
            60,
            check=True,
        )
        cfg = lab_config(rehearsal)
        lab["config"] = cfg
        for k, v in cfg.items():
            run(
                f"config-{k.split(':')[1]}",
                ["scripts/pulumi", "config", "set", "--stack", "existing", k, v],
                30,
                check=True,
            )
    try:
        with REC.step("lab-up"):
            up = run("up", ["scripts/lab", "up"], 420)
            for f in (
                ".state/outputs-existing.json",
                "baseline-card.md",
                "baseline-card.json",
                ".state/tflops.json",
            ):
                if (repo / f).exists():
                    shutil.copy(repo / f, WORK / f"lab-{Path(f).name}")
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


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "whole"
    gpu_host = mode not in ("rehearse", "rehearse-lab", "rehearse-fleet")
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
        with REC.step("containerd"):
            containerd()
        with REC.step("images"):
            images(gpu_host)
        fleet_mode = mode in ("fleet", "rehearse-fleet")
        if fleet_mode:
            PLUGIN_LABELS.update(FLEET_PLUGIN_LABELS)
        with REC.step("kubelet"):
            kubelet(ip, FLEET_NODE_LABELS if fleet_mode else None)
            wait_node_ready()
        if fleet_mode:
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
