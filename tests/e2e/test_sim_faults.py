"""End to end: a bad day on the simulated lab (issue #21), through ``scripts/lab`` (what the make
targets run) on the real engine against the real control plane, each in a throwaway copy of
the project with its own backend.

Each interruption ends with ``make lab`` working, or with the repair the lab printed run
exactly as printed, then ``make destroy`` finishing with nothing of the lab left: no process
(by working directory or command line in the copy), no listening port of its own, no sim
cluster directory, no port reservation.

* Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the cluster starts;
* SIGKILL of the engine alone (as the OOM killer does) at three steps, seen in the checkpoint
  as the step's pending operation: the cluster, the Helm release, the readiness gate;
* etcd killed (the supervisor takes the control plane down), and then, the lab rebuilt as
  printed, every process of its cluster stopped (SIGSTOP): ``make destroy`` ends within its
  bound and leaves nothing; etcd frozen (SIGSTOP: every command ends within its bound and
  names etcd);
* a full disk at the cluster step (the ``No space left on device`` line, no traceback);
* two labs in two copies at once, both passing on ports of their own; then no file anywhere
  in the temporary directory or the copies holds their client keys; and the first lines of
  ``make lab`` name the backend.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.sandbox import Project, make_project, missing_toolchain, shared_chart, toolchain_env
from variants.sim.ctl import default_cache_bin_dir
from variants.sim.ctl.ports import load as load_reservations

pytestmark = pytest.mark.sim

REPAIR = re.compile(r"`(GPULAB_STACK=\S+ make repair YES=1)`")
REBUILD = re.compile(r"`(GPULAB_STACK=\S+ make destroy && GPULAB_STACK=\S+ make lab)`")


@dataclass
class Lab:
    """A project copy with the sim stack initialised (profile ``profile``)."""

    project: Project
    profile: str
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.project.dir

    @property
    def workdir(self) -> Path:
        return self.dir / ".state" / "sim" / self.profile

    def env(self) -> dict[str, str]:
        return {**self.project.env, "GPULAB_STACK": "sim", "GPULAB_CHOICE_QUIET": "1"}

    def lab(self, action: str, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        t0 = time.monotonic()
        p = subprocess.run(
            ["bash", str(self.dir / "scripts" / "lab"), action, *extra],
            cwd=self.dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        self.timings[f"{action} #{sum(k.startswith(action) for k in self.timings) + 1}"] = (
            time.monotonic() - t0
        )
        return p

    def run_printed(self, command: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """A command the lab printed, run as printed from the checkout (a shell line)."""
        t0 = time.monotonic()
        p = subprocess.run(
            ["bash", "-c", command],
            cwd=self.dir,
            env={k: v for k, v in self.project.env.items() if k != "GPULAB_STACK"},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        self.timings[f"printed #{len(self.timings) + 1}: {command}"] = time.monotonic() - t0
        return p

    def start_up(self) -> subprocess.Popen[str]:
        """``scripts/lab up`` in its own session (its process group is a terminal's), its
        output in ``up.log``."""
        with (self.dir / "up.log").open("w") as log:
            return subprocess.Popen(
                ["bash", str(self.dir / "scripts" / "lab"), "up"],
                cwd=self.dir,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )

    def wait_up(self, proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str]:
        t0 = time.monotonic()
        code = proc.wait(timeout)
        self.timings[f"make lab (waited) #{len(self.timings) + 1}"] = time.monotonic() - t0
        return code, (self.dir / "up.log").read_text()

    def checkpoint(self) -> dict[str, Any]:
        """The stack's checkpoint as the file backend holds it now (pulumi writes it per step)."""
        backend = Path(self.project.env["PULUMI_BACKEND_URL"].removeprefix("file://"))
        for f in (
            backend / ".pulumi" / "stacks" / "gpu-lab" / "sim.json",
            backend / ".pulumi" / "stacks" / "sim.json",
        ):
            with contextlib.suppress(OSError, ValueError):
                return json.loads(f.read_text())  # type: ignore[no-any-return]
        return {}

    def pending(self, name: str) -> bool:
        ops = ((self.checkpoint().get("checkpoint") or {}).get("latest") or {}).get(
            "pending_operations"
        ) or []
        return any(str((op.get("resource") or {}).get("urn", "")).endswith(f"::{name}") for op in ops)

    def engine_pids(self) -> list[int]:
        return [
            p
            for p, cmd, cwd in _procs()
            if cwd == str(self.dir) and os.path.basename(cmd.split(" ")[0]) == "pulumi"
        ]

    def component_pid(self, component: str) -> int:
        f = self.workdir / "kwok" / "clusters" / self.profile / "pids" / f"{component}.pid"
        return int(f.read_text().strip())

    def residue(self) -> dict[str, Any]:
        """What of this lab is left: processes, its ports listening, its directory, its reservation."""
        mine = str(self.dir)
        ours = {
            pid: cmd
            for pid, cmd, cwd in _procs()
            if pid != os.getpid() and (cwd.startswith(mine) or mine in cmd)
        }
        procs = [f"{pid} {cmd[:120]}" for pid, cmd in ours.items()]
        # Its ports once held by one of its processes: released ports may be another lab's now.
        listening = sorted(set(self.ports.values()) & _ports_of(list(ours)))
        reserved = str(self.workdir) in load_reservations()
        found = {
            "processes": procs,
            "ports": listening,
            "directory": self.workdir.exists(),
            "reserved": reserved,
        }
        return {k: v for k, v in found.items() if v}

    ports: dict[str, int] = field(default_factory=dict)

    def remember_ports(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.ports = json.loads((self.workdir / "ports.json").read_text())

    def destroy_leaves_nothing(self) -> subprocess.CompletedProcess[str]:
        self.remember_ports()
        p = self.lab("destroy", timeout=600)
        assert p.returncode == 0, (
            f"make destroy exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}"
        )
        deadline = time.monotonic() + 20
        while self.residue() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert self.residue() == {}, f"left after make destroy: {self.residue()}\n{p.stderr[-3000:]}"
        export = json.loads(self.project.pulumi("stack", "export", "--stack", "sim").stdout)
        assert not export["deployment"].get("resources"), "the state still holds resources"
        return p


def _procs() -> Iterator[tuple[int, str, str]]:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cmd:
            yield int(entry.name), cmd, cwd


def _ports_of(pids: list[int]) -> set[int]:
    """Ports these processes listen on (their socket inodes in /proc/net/tcp*)."""
    from variants.sim.ctl.process import _ports_of as ports_of

    return ports_of(pids)


def _wait(what: str, cond: Callable[[], bool], timeout: float, step: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(step)


def _ok(p: subprocess.CompletedProcess[str], what: str) -> str:
    assert p.returncode == 0, f"{what} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    return p.stdout + p.stderr


@pytest.fixture
def lab(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Lab]:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    env = toolchain_env()
    why = missing_toolchain(env)
    if why:
        pytest.skip(why)
    profile = "f-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower().removeprefix("test_"))[:30].strip(
        "-"
    )
    project = make_project(tmp_path, env)
    project.init("sim", chartPath=chart, profile=profile)
    the_lab = Lab(project, profile)
    t0 = time.monotonic()
    try:
        yield the_lab
    finally:
        # Whatever failed, leave nothing running.
        if the_lab.residue():
            the_lab.lab("destroy", timeout=600)
        print(
            f"\ntimings ({request.node.name}, {time.monotonic() - t0:.0f}s in all): "
            + ", ".join(f"{k} {v:.1f}s" for k, v in the_lab.timings.items())
        )


def _kill_engine_at(lab: Lab, step: str, also: Callable[[], bool] = lambda: True, tries: int = 3) -> str:
    """Start ``make lab`` and SIGKILL the engine (only it) inside ``step``: once ``step`` is the
    checkpoint's pending operation, the engine is stopped (SIGSTOP: it writes nothing more,
    while its plugins go on with the step), ``also()`` is awaited (e.g. Helm's record of the
    install), then the engine is killed. When the step had ended before the stop, the engine
    is continued, the lab destroyed, and it is tried again (at most ``tries`` times)."""
    for attempt in range(1, tries + 1):
        proc = lab.start_up()
        _wait(
            f"the engine to start {step}", lambda p=proc: lab.pending(step) or p.poll() is not None, 600, 0.05
        )
        assert proc.poll() is None, (
            f"make lab ended before {step}:\n{(lab.dir / 'up.log').read_text()[-3000:]}"
        )
        engines = lab.engine_pids()
        assert engines, "no engine process found"
        for pid in engines:
            os.kill(pid, signal.SIGSTOP)
        if lab.pending(step):
            _wait(f"{step} to get as far as the test needs", also, 120, 0.2)
            for pid in engines:
                os.kill(pid, signal.SIGKILL)
            code, out = lab.wait_up(proc, 60)
            assert code != 0, out[-2000:]
            lab.timings[f"killed at {step} on attempt {attempt}"] = 0.0
            return out
        for pid in engines:
            os.kill(pid, signal.SIGCONT)
        lab.wait_up(proc, 900)
        _ok(lab.lab("destroy"), "make destroy before another attempt")
    raise AssertionError(f"{step} finished before the engine could be stopped in it, {tries} times")


def _printed_repair_works(lab: Lab, step: str, helm: bool = False) -> None:
    """`make lab` after the kill prints the repairs and the command; that command, run as
    printed, repairs the stack (a check afterwards finds nothing to repair)."""
    p = lab.lab("up")
    text = p.stdout + p.stderr
    assert p.returncode == 1, text[-3000:]
    assert "last run did not finish; repairs needed" in text, text[-3000:]
    assert "remove the lock left by a run that is gone" in text, text[-3000:]
    assert f"pending operation(s) of the interrupted run (creating {step}" in text, text[-3000:]
    assert "Traceback" not in text
    if helm:
        assert (
            "delete Helm's record of release gpu-operator/gpu-operator left by the interrupted install"
            in text
        ), text
    m = REPAIR.search(text)
    assert m, text[-3000:]
    done = _ok(lab.run_printed(m.group(1)), m.group(1))
    assert "removed the stale lock" in done and "cleared" in done, done[-3000:]
    if helm:
        assert "deleted Helm's record sh.helm.release.v1.gpu-operator.v1 in gpu-operator" in done, done
        assert _helm_record(lab) == []
    check = subprocess.run(
        ["bash", "-c", ". scripts/env.sh && .venv/bin/python -m ops.repair check --stack sim"],
        cwd=lab.dir,
        env=lab.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr[-3000:]


def test_ctrl_c_during_the_cluster_step_leaves_nothing_after_destroy(lab: Lab) -> None:
    proc = lab.start_up()
    _wait(
        "kwokctl to run", lambda: any("kwokctl" in c and str(lab.workdir) in c for _, c, _ in _procs()), 600
    )
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    code, out = lab.wait_up(proc, 300)
    assert code != 0, out[-3000:]
    # The cluster's helper got the SIGINT too, and then its provider's SIGKILL (pulumi-command
    # kills a cancelled command): what it had started may be left, outside the state.
    left = lab.workdir.exists()
    p = lab.destroy_leaves_nothing()
    if left:
        assert "was started by the lab but is not in the sim stack's state; removing it" in p.stderr, p.stderr
        assert f"removed the sim cluster '{lab.profile}'" in p.stderr, p.stderr
    lab.timings["cluster directory left by the interrupted up"] = float(left)


def test_engine_killed_at_the_cluster_step(lab: Lab) -> None:
    _kill_engine_at(lab, "sim-cluster")
    _printed_repair_works(lab, "sim-cluster")
    # The cluster's create never reached the state; destroy removes it by the lab's own record.
    lab.destroy_leaves_nothing()


def _helm_record(lab: Lab) -> list[str]:
    """Statuses of Helm's storage Secrets of the gpu-operator release (label ``status``)."""
    kubeconfig = lab.workdir / "kubeconfig.yaml"
    if not kubeconfig.exists():
        return []
    p = subprocess.run(
        [
            str(default_cache_bin_dir() / "kubectl"),
            "--kubeconfig",
            str(kubeconfig),
            "--request-timeout=5s",
            "-n",
            "gpu-operator",
            "get",
            "secrets",
            "-l",
            "owner=helm,name=gpu-operator",
            "-o",
            "jsonpath={.items[*].metadata.labels.status}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return p.stdout.split() if p.returncode == 0 else []


def test_engine_killed_at_the_helm_release_then_at_the_gate_each_repaired(lab: Lab) -> None:
    # Killed once Helm has written its record of the install (pending-install, or deployed if
    # the install got that far): a release the state does not hold, so `make lab` would stop
    # at "cannot re-use a name that is still in use".
    _kill_engine_at(lab, "gpu-operator-release", also=lambda: bool(_helm_record(lab)))
    lab.timings[f"Helm record when killed: {' '.join(_helm_record(lab))}"] = 0.0
    _printed_repair_works(lab, "gpu-operator-release", helm=True)
    # The repaired stack goes on past the release (no "cannot re-use a name" now) into the
    # gate, where the engine is killed again: one lab for both interruptions.
    _kill_engine_at(lab, "gpu-operator-gate")
    _printed_repair_works(lab, "gpu-operator-gate")
    _ok(lab.lab("up"), "make lab after the repairs")
    lab.destroy_leaves_nothing()


def test_etcd_killed_then_frozen_then_a_stopped_cluster_destroyed(lab: Lab) -> None:
    """One lab through three control-plane faults in turn: etcd killed (the supervisor takes
    the control plane down; the printed rebuild brings the lab back), etcd frozen (every
    command ends within its bound and names etcd), every process stopped (destroy still
    finishes and leaves nothing)."""
    _ok(lab.lab("up"), "make lab")
    _etcd_killed(lab)
    _etcd_frozen(lab)
    _destroy_a_stopped_cluster(lab)


def _etcd_killed(lab: Lab) -> None:
    """etcd killed: the supervisor takes the whole control plane down; `make lab` names it and
    prints the rebuild, which, run as printed, brings the lab up again."""
    etcd = lab.component_pid("etcd")
    others = [lab.component_pid(c) for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    os.kill(etcd, signal.SIGKILL)
    t0 = time.monotonic()
    _wait(
        "the supervisor to take the control plane down",
        lambda: not any(Path(f"/proc/{p}").exists() for p in others),
        30,
    )
    lab.timings["control plane down after etcd was killed"] = time.monotonic() - t0
    down = json.loads((lab.workdir / "down.json").read_text())
    assert down["component"] == "etcd", down
    p = lab.lab("up")
    text = p.stdout + p.stderr
    assert p.returncode == 1 and "does not answer" in text and "etcd" in text, text[-3000:]
    assert "supervisor took it down" in text, text[-3000:]
    print("\nmake lab after etcd was killed:\n" + p.stderr[-1500:])
    m = REBUILD.search(text)
    assert m, text[-3000:]
    _ok(lab.run_printed(m.group(1)), m.group(1))


def _destroy_a_stopped_cluster(lab: Lab) -> None:
    """Every process of the lab's cluster stopped (SIGSTOP: present, not answering): it is the
    lab's own cluster all the same. ``make destroy`` finishes within its bound (no finalizer
    waits), drops the Kubernetes resources from the state, deletes the cluster with its own
    command (which continues the stopped processes to stop them) and leaves nothing."""
    from variants.sim.ctl.process import Paths, _cluster_pids

    paths = Paths(lab.profile, lab.workdir)
    pids = sorted(_cluster_pids(paths))
    assert pids
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        runs = sum(k.startswith("destroy #") for k in lab.timings)
        down = lab.destroy_leaves_nothing()
        took = lab.timings[f"destroy #{runs + 1}"]  # make destroy alone, not the residue wait
    finally:
        for pid in sorted(_cluster_pids(paths)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert "does not answer (the sim cluster directory" in down.stderr and "exists;" in down.stderr, (
        down.stderr
    )
    assert "removed its 5 unreachable Kubernetes resource(s)" in down.stderr, down.stderr
    assert took < 180, f"make destroy took {took:.0f}s on a stopped cluster"


def _etcd_frozen(lab: Lab) -> None:
    """etcd frozen on a lab that is up: debug-bundle, `make lab` and `make card` each end within
    their bound naming etcd; the printed rebuild brings the lab up again."""
    # etcd frozen: every command ends within its bound and says etcd did not answer.
    os.kill(lab.component_pid("etcd"), signal.SIGSTOP)
    t0 = time.monotonic()
    bundle = lab.lab("debug-bundle", timeout=180)
    took = time.monotonic() - t0
    assert bundle.returncode == 0, bundle.stderr[-3000:]
    assert took < 90, f"make debug-bundle took {took:.0f}s with etcd frozen"
    assert "etcd" in bundle.stderr, bundle.stderr[-3000:]
    assert "stack/outputs.json" in bundle.stdout and "local/status.txt" in bundle.stdout, bundle.stdout
    print(f"\nmake debug-bundle with etcd frozen ({took:.1f}s):\n" + bundle.stderr[-1500:])
    t0 = time.monotonic()
    p = lab.lab("up", timeout=180)
    text = p.stdout + p.stderr
    assert p.returncode == 1 and "etcd" in text and time.monotonic() - t0 < 90, text[-3000:]
    print("\nmake lab with etcd frozen:\n" + p.stderr[-1500:])
    card = lab.lab("card", timeout=180)
    assert card.returncode == 1, card.stdout[-2000:]
    assert "the cluster is down now: every fact is from the last run" in card.stdout.splitlines()[-1]
    print("\nmake card with etcd frozen:\n" + card.stdout.splitlines()[-1])
    m = REBUILD.search(text)
    assert m, text[-3000:]
    _ok(lab.run_printed(m.group(1)), m.group(1))


def test_disk_full_at_the_cluster_step_says_so(lab: Lab) -> None:
    lab.workdir.mkdir(parents=True)
    (lab.workdir / ".gpulab-simcluster").write_text(json.dumps({"name": lab.profile}) + "\n")
    (lab.workdir / "logs").mkdir()
    (lab.workdir / "logs" / "nvidia-smi.log").symlink_to("/dev/full")  # every write: ENOSPC
    p = lab.lab("up")
    text = p.stdout + p.stderr
    assert p.returncode != 0
    assert "No space left on device" in text and "free disk space" in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    lab.destroy_leaves_nothing()


def _client_keys(kubeconfig: str) -> list[str]:
    """What would identify this lab's client key in a file: its base64 (as in a kubeconfig)
    and a line of its PEM body."""
    user = yaml.safe_load(kubeconfig)["users"][0]["user"]
    data = user["client-key-data"]
    pem = base64.b64decode(data).decode()
    body = [line for line in pem.splitlines() if line and not line.startswith("-----")]
    # From the middle: the start of every key's base64 is its PEM header, the same for all.
    middle = len(data) // 2
    return [data[middle : middle + 64], body[len(body) // 2]]


def _files_with(needles: list[str], roots: list[Path], since: float) -> list[str]:
    found = []
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                path = Path(dirpath) / name
                try:
                    st = path.lstat()
                    if (
                        not path.is_file()
                        or path.is_symlink()
                        or st.st_mtime < since
                        or st.st_size > 2_000_000
                    ):
                        continue
                    text = path.read_bytes().decode(errors="ignore")
                except OSError:
                    continue
                if any(n in text for n in needles):
                    found.append(str(path))
    return found


def test_two_labs_at_once_then_no_key_material_left(tmp_path: Path) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    env = toolchain_env()
    why = missing_toolchain(env)
    if why:
        pytest.skip(why)
    since = time.time() - 1
    labs = []
    for i in (1, 2):
        project = make_project(tmp_path / f"clone{i}", env)
        project.init("sim", chartPath=chart, profile=f"f-two-{i}")
        labs.append(Lab(project, f"f-two-{i}"))
    try:
        t0 = time.monotonic()
        procs = [lab.start_up() for lab in labs]
        # Where the Kubernetes provider's kubeconfig files go while the engine runs: the run's
        # private TMPDIR (scripts/pulumi), never /tmp.
        contained = set()
        while any(p.poll() is None for p in procs) and time.monotonic() - t0 < 900:
            for lab in labs:
                contained |= {f.name for f in (lab.dir / ".state" / "tmp").glob("pulumi.*/kubeconfig*")}
            time.sleep(0.5)
        results = [lab.wait_up(p, 60) for lab, p in zip(labs, procs, strict=True)]
        both = time.monotonic() - t0
        assert contained, "no kubeconfig file of the Kubernetes provider seen in the runs' private TMPDIR"
        for lab, (code, out) in zip(labs, results, strict=True):
            assert code == 0, out[-4000:]
            backend = lab.project.env["PULUMI_BACKEND_URL"]
            head = "\n".join(out.splitlines()[:6])
            assert (
                f"Pulumi stack 'sim' (the sim lab) in the backend {backend} (PULUMI_BACKEND_URL is set)"
                in head
            ), head
            assert out.splitlines()[-1].endswith("checklist pass (simulated lab)"), out.splitlines()[-1]
            lab.remember_ports()
        a, b = (set(lab.ports.values()) for lab in labs)
        assert a and b and not a & b, f"the labs share ports: {sorted(a & b)}"
        keys = [k for lab in labs for k in _client_keys(lab.project.secret_outputs("sim")["kubeconfig"])]
        for lab in labs:
            lab.destroy_leaves_nothing()
        # /tmp, each copy, and each copy's TMPDIR (where a user's /tmp would be: make_project).
        roots = [Path(tempfile.gettempdir()), *(lab.dir for lab in labs)]
        roots += [Path(lab.project.env["TMPDIR"]) for lab in labs]
        leaked = _files_with(keys, roots, since)
        assert leaked == [], f"files holding a lab's client key after make destroy: {leaked}"
        print(
            f"\ntimings: both make lab at once {both:.1f}s; "
            + "; ".join(", ".join(f"{k} {v:.1f}s" for k, v in lab.timings.items()) for lab in labs)
        )
    finally:
        for lab in labs:
            if lab.residue():
                lab.lab("destroy", timeout=600)
