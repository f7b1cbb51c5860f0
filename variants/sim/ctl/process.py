"""Process control of the simulated cluster: its directories, binaries, processes and ports.

Finds the binaries, runs kwokctl and kubectl in the cluster's environment, finds the
cluster's processes and listening ports from pid files and ``/proc``, stops them and checks
that none survives, and turns the component logs of a failed start into a cause and a fix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError

#: Binaries kwokctl runs; all must sit in the bin dir.
REQUIRED_BINARIES: Final = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
    "kwokctl",
)
BUILD_FIX: Final = "run `make toolchain` (or toolchain/sim/build.sh)"
#: Marker file: a work dir holding it was made by this package, so ``down`` may remove it.
MARKER: Final = ".gpulab-simcluster"


class SimClusterError(GpuLabError, RuntimeError):
    """A step failed; ``str()`` names the cause and the first thing to try."""

    def __init__(self, cause: str, fix: str) -> None:
        super().__init__(f"{cause}\n  fix: {fix}")
        self.cause = cause
        self.fix = fix


class PortInUseError(SimClusterError):
    """A component could not listen because its port was taken (often by a concurrent create)."""


def default_cache_bin_dir(env: Mapping[str, str] | None = None) -> Path:
    """``${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}/sim/bin`` (toolchain/sim/build.sh)."""
    env = os.environ if env is None else env
    cache = env.get("GPULAB_CACHE")
    if not cache:
        xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".cache")
        cache = str(Path(xdg) / "gpu-lab")
    return Path(cache) / "sim" / "bin"


def _log(msg: str) -> None:
    # Never fail on the way out: stderr may be a closed pipe (the engine was killed) or a
    # full disk, and clean-up must go on.
    with contextlib.suppress(OSError, ValueError):
        print(f"[simcluster] {msg}", file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Paths:
    """Where a cluster lives. Everything is under ``workdir``; ``down`` removes it all."""

    name: str
    workdir: Path

    @property
    def kwok_workdir(self) -> Path:
        """``KWOK_WORKDIR`` for kwokctl (instead of ``~/.kwok``)."""
        return self.workdir / "kwok"

    @property
    def cluster_dir(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def config_file(self) -> Path:
        return self.workdir / "kwokctl-config.yaml"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "nvidia-smi.log"

    @property
    def compute_log_file(self) -> Path:
        """The compute Pod's log (the vectorAdd sample's output, marked simulated)."""
        return self.workdir / "logs" / "vectoradd.log"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def marker(self) -> Path:
        return self.workdir / MARKER


@dataclasses.dataclass(frozen=True)
class Tools:
    """The simulated cluster's binaries in one directory."""

    bin_dir: Path

    @classmethod
    def locate(cls, bin_dir: Path | None, required: Iterable[str] = REQUIRED_BINARIES) -> Tools:
        """Find the bin dir: ``bin_dir``, else ``$GPULAB_SIM_BIN_DIR`` (set by
        toolchain/sim/env.sh), else where ``kwokctl`` is on PATH, else the build cache.

        Raises:
            SimClusterError: a binary is missing or not executable.
        """
        if bin_dir is None and os.environ.get("GPULAB_SIM_BIN_DIR"):
            bin_dir = Path(os.environ["GPULAB_SIM_BIN_DIR"])
        if bin_dir is None:
            on_path = shutil.which("kwokctl")
            candidate = Path(on_path).parent if on_path else default_cache_bin_dir()
            if on_path and not all((candidate / b).exists() for b in REQUIRED_BINARIES):
                candidate = default_cache_bin_dir()
            bin_dir = candidate
        bin_dir = bin_dir.expanduser().absolute()
        missing = [b for b in required if not os.access(bin_dir / b, os.X_OK)]
        if missing:
            raise SimClusterError(
                f"simulated-cluster binaries missing in {bin_dir}: {', '.join(missing)}",
                f"{BUILD_FIX}, or pass --bin-dir pointing at the sim bin dir",
            )
        return cls(bin_dir)

    def path(self, name: str) -> str:
        return str(self.bin_dir / name)


def _env(paths: Paths, tools: Tools | None) -> dict[str, str]:
    """Environment for kwokctl/kubectl: our work dir, our binaries first on PATH.

    Every inherited ``KWOK_*`` variable is dropped: kwokctl lets them override the config
    (e.g. ``KWOK_KUBE_VERSION``, ``KWOK_RUNTIME``), and this cluster must be what we render.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
    env["KWOK_WORKDIR"] = str(paths.kwok_workdir)
    if tools is not None:
        env["PATH"] = os.pathsep.join([str(tools.bin_dir), env.get("PATH", "")])
    # kubectl must never read or write the user's ~/.kube (config, discovery cache).
    env["KUBECONFIG"] = str(paths.kubeconfig)
    env["KUBECACHEDIR"] = str(paths.workdir / "kube-cache")
    # The components outlive this run, whose private TMPDIR goes when it ends (scripts/pulumi):
    # theirs is the cluster's own, removed with it.
    tmp = paths.workdir / "tmp"
    with contextlib.suppress(OSError):
        tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    env["TMPDIR"] = str(tmp)
    return env


def _run(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    timeout: float,
    input_text: str | None = None,
    capture: bool = True,
) -> cmd.Result:
    """Run ``argv`` in ``env`` (:func:`gpulab.core.run.run`); with ``capture=False`` its output is
    then written to our stderr.

    Our stdout carries only the final JSON, so a child never writes to it.
    """
    result = cmd.run(argv, env=env, timeout=timeout, input=input_text)
    if not capture:
        sys.stderr.write(result.stdout + result.stderr)
    return result


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _kubectl(
    tools: Tools,
    paths: Paths,
    args: Sequence[str],
    *,
    timeout: float = 30,
    input_text: str | None = None,
) -> cmd.Result:
    argv = [
        tools.path("kubectl"),
        "--kubeconfig",
        str(paths.kubeconfig),
        "--request-timeout=10s",
        *args,
    ]
    return _run(argv, _env(paths, tools), timeout=timeout, input_text=input_text)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + t for t in text[-lines:]) or "    (empty)"


def _dead_components(paths: Paths) -> list[str]:
    """Components kwokctl started (a pid file exists) whose process has exited."""
    pid_dir = paths.cluster_dir / "pids"
    dead: list[str] = []
    for f in sorted(pid_dir.glob("*.pid")) if pid_dir.is_dir() else []:
        try:
            pid = int(f.read_text().strip())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            dead.append(f.stem)
    return dead


def _diagnose_start_failure(paths: Paths, dead: Sequence[str] = ()) -> SimClusterError:
    """Turn the component logs of a cluster that did not come up into a cause and a fix.

    The logs are first copied to ``<workdir>/failed-start-logs/``, which survives the
    clean-up of the cluster dir, so the paths in the message stay readable.
    """
    logs = paths.workdir / "failed-start-logs"
    shutil.rmtree(logs, ignore_errors=True)
    if (paths.cluster_dir / "logs").is_dir():
        shutil.copytree(paths.cluster_dir / "logs", logs)
    in_use = re.compile(r"address already in use", re.IGNORECASE)
    for component in (
        "etcd",
        "kube-apiserver",
        "kwok-controller",
        "kube-controller-manager",
        "kube-scheduler",
    ):
        log = logs / f"{component}.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if in_use.search(text):
            m = re.search(
                r"(127\.0\.0\.1|0\.0\.0\.0|\[::\]):(\d+)[^\n]*address already in use",
                text,
            )
            port = f" port {m.group(2)}" if m else " a port"
            return PortInUseError(
                f"{component} could not listen:{port} is already in use (log {log}):\n{_tail(log)}",
                "stop the process holding that port (`ss -ltnp`), or run `up` again: it "
                "chooses other free ports for a new cluster",
            )
    apiserver_log = logs / "kube-apiserver.log"
    text = apiserver_log.read_text(encoding="utf-8", errors="replace") if apiserver_log.exists() else ""
    if re.search(r"no default routes|suitable network address", text, re.IGNORECASE):
        return SimClusterError(
            "kube-apiserver found no address to advertise (host has no default route); "
            f"log {apiserver_log}:\n{_tail(apiserver_log)}",
            "pass --apiserver-advertise-address <a non-loopback IP of this host>",
        )
    down_cmd = f"`python -m variants.sim.ctl down --name {paths.name} --workdir {paths.workdir}`"
    first = next((c for c in ("etcd", "kube-apiserver") if c in dead), dead[0] if dead else None)
    if first is not None:
        log = logs / f"{first}.log"
        return SimClusterError(
            f"{first} exited during start-up (exited: {', '.join(dead)}); last lines of {log}:\n{_tail(log)}",
            f"fix the cause the log names, then {down_cmd} and `up` again",
        )
    return SimClusterError(
        f"the API server did not become ready; last lines of {apiserver_log}:\n"
        f"{_tail(apiserver_log)}\n  etcd ({logs / 'etcd.log'}):\n{_tail(logs / 'etcd.log', 5)}",
        f"read the logs above; then {down_cmd} and `up` again",
    )


def _pid_alive(pid: int) -> bool:
    """True when ``pid`` runs and is not a zombie (an exited child nobody reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Field 3 (after the parenthesised command name) is the state.
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cluster_pids(paths: Paths) -> set[int]:
    """Live processes of this cluster: its pid files, plus any process whose command line
    names the cluster dir (kwokctl passes every component paths inside it)."""
    pids: set[int] = set()
    pid_dir = paths.cluster_dir / "pids"
    if pid_dir.is_dir():
        for f in pid_dir.glob("*.pid"):
            try:
                pids.add(int(f.read_text().strip()))
            except (OSError, ValueError):
                continue
    marker = str(paths.cluster_dir) + os.sep
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and marker in _cmdline(int(entry.name)):
            pids.add(int(entry.name))
    pids.discard(os.getpid())
    # A pid from a stale file may belong to an unrelated process now: keep only ours.
    return {p for p in pids if _pid_alive(p) and str(paths.cluster_dir) in _cmdline(p)}


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _listening() -> dict[str, int]:
    """Listening TCP sockets of this host: inode -> port (from /proc/net/tcp and tcp6)."""
    result: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                result[f[9]] = int(f[1].rsplit(":", 1)[1], 16)
    return result


def _ports_of(pids: Iterable[int]) -> set[int]:
    listening = _listening()
    ports: set[int] = set()
    for pid in pids:
        ports |= {listening[i] for i in _socket_inodes(pid) if i in listening}
    return ports


def _stop_pids(pids: set[int], grace: float = 10.0) -> None:
    """SIGTERM each pid, then SIGKILL what is left after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if _pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
                    if sig == signal.SIGTERM:
                        os.kill(pid, signal.SIGCONT)  # a stopped process acts on it once continued
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_pid_alive(p) for p in pids):
            time.sleep(0.2)
        if not any(_pid_alive(p) for p in pids):
            return


def _teardown(paths: Paths, tools: Tools | None, *, remove_workdir: bool) -> None:
    """Stop every process of the cluster, verify it, and remove its files.

    The supervisor goes first (:func:`variants.sim.ctl.supervise.stop`), so it does not take
    the stopping components for a failure; with ``remove_workdir`` the lab's ports are
    released (:func:`variants.sim.ctl.ports.release`).

    Raises:
        SimClusterError: a process or a listening port of the cluster survived.
    """
    from variants.sim.ctl import ports, supervise

    supervise.stop(paths.workdir)
    pids = _cluster_pids(paths)
    for pid in pids:
        if supervise.proc_state(pid) == "T":
            # A frozen (SIGSTOPped) component acts on no signal but SIGKILL until continued.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    ports_ = _ports_of(pids)
    if paths.cluster_dir.exists() and tools is not None:
        proc = _run(
            [tools.path("kwokctl"), "--name", paths.name, "delete", "cluster"],
            _env(paths, tools),
            timeout=120,
            capture=False,
        )
        if proc.returncode != 0:
            _log(f"kwokctl delete cluster exited {proc.returncode}; stopping the processes directly")
    left = _cluster_pids(paths) | {p for p in pids if _pid_alive(p)}
    if left:
        _log(f"stopping leftover processes {sorted(left)}")
        _stop_pids(left)
    still = sorted(p for p in left if _pid_alive(p))
    if still:
        raise SimClusterError(
            f"processes of cluster {paths.name!r} survived SIGKILL: {still}",
            f"inspect them with `ps -o pid,stat,cmd -p {','.join(map(str, still))}`",
        )
    deadline = time.monotonic() + 10
    while True:
        busy = sorted(ports_ & set(_listening().values()))
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if busy:
        raise SimClusterError(
            f"ports of cluster {paths.name!r} still listening after its processes stopped: {busy}",
            "find the owner with `ss -ltnp` and stop it",
        )
    if remove_workdir:
        if paths.marker.exists() or (paths.workdir.exists() and not any(paths.workdir.iterdir())):
            shutil.rmtree(paths.workdir, ignore_errors=False)
        elif paths.workdir.exists():
            # Not ours as a whole: remove only what up creates.
            for p in (paths.kwok_workdir, paths.log_file.parent):
                shutil.rmtree(p, ignore_errors=True)
            for f in (paths.config_file, paths.kubeconfig):
                f.unlink(missing_ok=True)
        ports.release(paths.workdir)
    elif paths.kwok_workdir.exists():
        shutil.rmtree(paths.kwok_workdir)
